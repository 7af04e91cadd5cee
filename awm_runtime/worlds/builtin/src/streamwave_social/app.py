import os
import json
from typing import List, Optional, Literal
from datetime import datetime, timezone

from fastapi import FastAPI, Query, Path, Body
from pydantic import BaseModel, Field, ConfigDict
from sqlalchemy import (
    create_engine, Column, Integer, String, DateTime, ForeignKey, Text, UniqueConstraint, func
)
from sqlalchemy.orm import declarative_base, sessionmaker

engine = create_engine(os.getenv("DATABASE_PATH", "sqlite:///streamwave_social.db"), connect_args={"check_same_thread": False})
SessionLocal = sessionmaker(bind=engine, expire_on_commit=False)
Base = declarative_base()

CURRENT_USER_ID = 1

app = FastAPI(
    title="StreamWave Social API",
    description="StreamWave is a video sharing and social platform: channels, videos, subscriptions, comments, reactions, playlists, watch history, community posts, notifications and content reports. Every call acts as the signed-in user (user id 1), who owns the channel 'Alex Rivera Cooks'.",
    version="1.0.0",
)


def utcnow() -> datetime:
    return datetime.now(timezone.utc).replace(tzinfo=None)


# ---------------------------------------------------------------------------
# ORM models (mirror schema.sql)
# ---------------------------------------------------------------------------

class User(Base):
    __tablename__ = "users"
    id = Column(Integer, primary_key=True)
    username = Column(String, unique=True, nullable=False)
    display_name = Column(String, nullable=False)
    email = Column(String, unique=True, nullable=False)
    bio = Column(Text)
    country_code = Column(String)
    is_verified = Column(Integer, nullable=False, default=0)
    created_at = Column(DateTime, nullable=False, default=func.now())


class Channel(Base):
    __tablename__ = "channels"
    id = Column(Integer, primary_key=True)
    owner_user_id = Column(Integer, ForeignKey("users.id", ondelete="CASCADE"), unique=True, nullable=False)
    handle = Column(String, unique=True, nullable=False)
    name = Column(String, nullable=False)
    description = Column(Text)
    category = Column(String, nullable=False)
    subscriber_count = Column(Integer, nullable=False, default=0)
    created_at = Column(DateTime, nullable=False, default=func.now())


class Subscription(Base):
    __tablename__ = "subscriptions"
    id = Column(Integer, primary_key=True)
    subscriber_user_id = Column(Integer, ForeignKey("users.id", ondelete="CASCADE"), nullable=False)
    channel_id = Column(Integer, ForeignKey("channels.id", ondelete="CASCADE"), nullable=False)
    notifications_enabled = Column(Integer, nullable=False, default=1)
    subscribed_at = Column(DateTime, nullable=False, default=func.now())
    __table_args__ = (UniqueConstraint("subscriber_user_id", "channel_id"),)


class Video(Base):
    __tablename__ = "videos"
    id = Column(Integer, primary_key=True)
    channel_id = Column(Integer, ForeignKey("channels.id", ondelete="CASCADE"), nullable=False)
    title = Column(String, nullable=False)
    description = Column(Text)
    tags = Column(String)
    duration_seconds = Column(Integer, nullable=False)
    visibility = Column(String, nullable=False, default="public")
    status = Column(String, nullable=False, default="published")
    view_count = Column(Integer, nullable=False, default=0)
    like_count = Column(Integer, nullable=False, default=0)
    dislike_count = Column(Integer, nullable=False, default=0)
    published_at = Column(DateTime)
    created_at = Column(DateTime, nullable=False, default=func.now())


class ChannelPost(Base):
    __tablename__ = "channel_posts"
    id = Column(Integer, primary_key=True)
    channel_id = Column(Integer, ForeignKey("channels.id", ondelete="CASCADE"), nullable=False)
    body = Column(Text, nullable=False)
    linked_video_id = Column(Integer, ForeignKey("videos.id", ondelete="SET NULL"))
    like_count = Column(Integer, nullable=False, default=0)
    created_at = Column(DateTime, nullable=False, default=func.now())


class Comment(Base):
    __tablename__ = "comments"
    id = Column(Integer, primary_key=True)
    video_id = Column(Integer, ForeignKey("videos.id", ondelete="CASCADE"), nullable=False)
    user_id = Column(Integer, ForeignKey("users.id", ondelete="CASCADE"), nullable=False)
    parent_comment_id = Column(Integer, ForeignKey("comments.id", ondelete="CASCADE"))
    body = Column(Text, nullable=False)
    like_count = Column(Integer, nullable=False, default=0)
    is_pinned = Column(Integer, nullable=False, default=0)
    created_at = Column(DateTime, nullable=False, default=func.now())
    edited_at = Column(DateTime)


class VideoReaction(Base):
    __tablename__ = "video_reactions"
    id = Column(Integer, primary_key=True)
    video_id = Column(Integer, ForeignKey("videos.id", ondelete="CASCADE"), nullable=False)
    user_id = Column(Integer, ForeignKey("users.id", ondelete="CASCADE"), nullable=False)
    reaction = Column(String, nullable=False)
    created_at = Column(DateTime, nullable=False, default=func.now())
    __table_args__ = (UniqueConstraint("video_id", "user_id"),)


class Playlist(Base):
    __tablename__ = "playlists"
    id = Column(Integer, primary_key=True)
    owner_user_id = Column(Integer, ForeignKey("users.id", ondelete="CASCADE"), nullable=False)
    title = Column(String, nullable=False)
    description = Column(Text)
    visibility = Column(String, nullable=False, default="private")
    created_at = Column(DateTime, nullable=False, default=func.now())
    updated_at = Column(DateTime, nullable=False, default=func.now())
    __table_args__ = (UniqueConstraint("owner_user_id", "title"),)


class PlaylistItem(Base):
    __tablename__ = "playlist_items"
    id = Column(Integer, primary_key=True)
    playlist_id = Column(Integer, ForeignKey("playlists.id", ondelete="CASCADE"), nullable=False)
    video_id = Column(Integer, ForeignKey("videos.id", ondelete="CASCADE"), nullable=False)
    position = Column(Integer, nullable=False)
    added_at = Column(DateTime, nullable=False, default=func.now())
    __table_args__ = (UniqueConstraint("playlist_id", "video_id"),)


class WatchHistory(Base):
    __tablename__ = "watch_history"
    id = Column(Integer, primary_key=True)
    user_id = Column(Integer, ForeignKey("users.id", ondelete="CASCADE"), nullable=False)
    video_id = Column(Integer, ForeignKey("videos.id", ondelete="CASCADE"), nullable=False)
    watched_seconds = Column(Integer, nullable=False)
    watched_at = Column(DateTime, nullable=False, default=func.now())


class Notification(Base):
    __tablename__ = "notifications"
    id = Column(Integer, primary_key=True)
    user_id = Column(Integer, ForeignKey("users.id", ondelete="CASCADE"), nullable=False)
    type = Column(String, nullable=False)
    message = Column(Text, nullable=False)
    related_video_id = Column(Integer, ForeignKey("videos.id", ondelete="SET NULL"))
    related_channel_id = Column(Integer, ForeignKey("channels.id", ondelete="SET NULL"))
    is_read = Column(Integer, nullable=False, default=0)
    created_at = Column(DateTime, nullable=False, default=func.now())


class Report(Base):
    __tablename__ = "reports"
    id = Column(Integer, primary_key=True)
    reporter_user_id = Column(Integer, ForeignKey("users.id", ondelete="CASCADE"), nullable=False)
    target_type = Column(String, nullable=False)
    target_id = Column(Integer, nullable=False)
    reason = Column(String, nullable=False)
    details = Column(Text)
    status = Column(String, nullable=False, default="open")
    created_at = Column(DateTime, nullable=False, default=func.now())
    resolved_at = Column(DateTime)


# ---------------------------------------------------------------------------
# Pydantic schemas
# ---------------------------------------------------------------------------

Visibility = Literal["public", "unlisted", "private"]
Category = Literal["Food", "Technology", "Travel", "Gaming", "Wellness", "Finance", "Home & Garden", "Education", "Music", "Entertainment"]
ReactionType = Literal["like", "dislike"]
ReportReason = Literal["spam", "harassment", "hate_speech", "misinformation", "copyright", "sexual_content", "other"]
ReportTarget = Literal["video", "comment", "channel", "post"]


class UserOut(BaseModel):
    model_config = ConfigDict(from_attributes=True)
    id: int = Field(..., description="User ID", json_schema_extra={"example": 2})
    username: str = Field(..., description="Unique username (shown as @username)", json_schema_extra={"example": "jamie_bakes"})
    display_name: str = Field(..., description="Display name", json_schema_extra={"example": "Jamie Chen"})
    bio: Optional[str] = Field(None, description="Profile bio")
    country_code: Optional[str] = Field(None, description="ISO country code", json_schema_extra={"example": "CA"})
    is_verified: bool = Field(..., description="Verified account badge", json_schema_extra={"example": False})
    created_at: Optional[datetime] = Field(None, description="Account creation time")


class MeOut(UserOut):
    email: str = Field(..., description="Account email", json_schema_extra={"example": "alex.rivera@example.com"})
    channel_id: Optional[int] = Field(None, description="ID of the channel owned by the current user", json_schema_extra={"example": 1})
    channel_name: Optional[str] = Field(None, description="Name of the channel owned by the current user", json_schema_extra={"example": "Alex Rivera Cooks"})


class ChannelOut(BaseModel):
    model_config = ConfigDict(from_attributes=True)
    id: int = Field(..., description="Channel ID", json_schema_extra={"example": 2})
    owner_user_id: int = Field(..., description="Owner user ID", json_schema_extra={"example": 3})
    handle: str = Field(..., description="Channel handle", json_schema_extra={"example": "@techtalkdaily"})
    name: str = Field(..., description="Channel name", json_schema_extra={"example": "TechTalk Daily"})
    description: Optional[str] = Field(None, description="Channel description")
    category: str = Field(..., description="Channel category", json_schema_extra={"example": "Technology"})
    subscriber_count: int = Field(..., description="Number of subscribers", json_schema_extra={"example": 842300})
    created_at: Optional[datetime] = Field(None, description="Channel creation time")


class ChannelDetailOut(ChannelOut):
    video_count: int = Field(..., description="Number of videos visible to the caller", json_schema_extra={"example": 7})
    is_subscribed: bool = Field(..., description="Whether the current user is subscribed", json_schema_extra={"example": True})


class ChannelUpdate(BaseModel):
    name: Optional[str] = Field(None, description="New channel name", json_schema_extra={"example": "Alex Rivera Cooks"})
    description: Optional[str] = Field(None, description="New channel description", json_schema_extra={"example": "Weeknight recipes on a budget."})
    category: Optional[Category] = Field(None, description="New category", json_schema_extra={"example": "Food"})


class SubscriptionOut(BaseModel):
    model_config = ConfigDict(from_attributes=True)
    id: int = Field(..., description="Subscription ID", json_schema_extra={"example": 1})
    subscriber_user_id: int = Field(..., description="Subscriber user ID", json_schema_extra={"example": 1})
    channel_id: int = Field(..., description="Channel ID", json_schema_extra={"example": 2})
    channel_name: Optional[str] = Field(None, description="Channel name", json_schema_extra={"example": "TechTalk Daily"})
    channel_handle: Optional[str] = Field(None, description="Channel handle", json_schema_extra={"example": "@techtalkdaily"})
    notifications_enabled: bool = Field(..., description="Whether new-upload notifications are on", json_schema_extra={"example": True})
    subscribed_at: Optional[datetime] = Field(None, description="When the subscription started")


class SubscriberOut(BaseModel):
    subscription_id: int = Field(..., description="Subscription ID", json_schema_extra={"example": 6})
    user_id: int = Field(..., description="Subscriber user ID", json_schema_extra={"example": 2})
    username: str = Field(..., description="Subscriber username", json_schema_extra={"example": "jamie_bakes"})
    display_name: str = Field(..., description="Subscriber display name", json_schema_extra={"example": "Jamie Chen"})
    subscribed_at: Optional[datetime] = Field(None, description="When they subscribed")


class SubscribeRequest(BaseModel):
    notifications_enabled: bool = Field(True, description="Turn on notifications for new uploads", json_schema_extra={"example": True})


class SubscriptionUpdate(BaseModel):
    notifications_enabled: bool = Field(..., description="Turn new-upload notifications on (true) or off (false)", json_schema_extra={"example": True})


class VideoOut(BaseModel):
    model_config = ConfigDict(from_attributes=True)
    id: int = Field(..., description="Video ID", json_schema_extra={"example": 7})
    channel_id: int = Field(..., description="Channel ID", json_schema_extra={"example": 2})
    channel_name: Optional[str] = Field(None, description="Channel name", json_schema_extra={"example": "TechTalk Daily"})
    title: str = Field(..., description="Video title", json_schema_extra={"example": "M4 MacBook Air: 3 Months Later"})
    description: Optional[str] = Field(None, description="Video description")
    tags: Optional[str] = Field(None, description="Comma separated tags", json_schema_extra={"example": "laptop,review"})
    duration_seconds: int = Field(..., description="Length in seconds", json_schema_extra={"example": 1032})
    visibility: str = Field(..., description="public, unlisted or private", json_schema_extra={"example": "public"})
    status: str = Field(..., description="processing, published or removed", json_schema_extra={"example": "published"})
    view_count: int = Field(..., description="Total views", json_schema_extra={"example": 512000})
    like_count: int = Field(..., description="Total likes", json_schema_extra={"example": 21400})
    dislike_count: int = Field(..., description="Total dislikes", json_schema_extra={"example": 380})
    my_reaction: Optional[str] = Field(None, description="The current user's reaction (like/dislike) if any", json_schema_extra={"example": "like"})
    published_at: Optional[datetime] = Field(None, description="Publication time")
    created_at: Optional[datetime] = Field(None, description="Upload time")


class VideoCreate(BaseModel):
    title: str = Field(..., min_length=1, max_length=100, description="Video title", json_schema_extra={"example": "One-Pan Lemon Garlic Chicken"})
    description: Optional[str] = Field(None, description="Video description", json_schema_extra={"example": "Weeknight chicken with crispy potatoes, one pan."})
    tags: Optional[str] = Field(None, description="Comma separated tags", json_schema_extra={"example": "chicken,one pan,weeknight"})
    duration_seconds: int = Field(..., gt=0, description="Length in seconds", json_schema_extra={"example": 742})
    visibility: Visibility = Field("public", description="public, unlisted or private", json_schema_extra={"example": "public"})


class VideoUpdate(BaseModel):
    title: Optional[str] = Field(None, min_length=1, max_length=100, description="New title", json_schema_extra={"example": "Sourdough Starter from Scratch"})
    description: Optional[str] = Field(None, description="New description")
    tags: Optional[str] = Field(None, description="New comma separated tags", json_schema_extra={"example": "sourdough,bread"})
    visibility: Optional[Visibility] = Field(None, description="New visibility: public, unlisted or private", json_schema_extra={"example": "public"})


class ReactionRequest(BaseModel):
    reaction: ReactionType = Field(..., description="like or dislike", json_schema_extra={"example": "like"})


class ReactionOut(BaseModel):
    video_id: int = Field(..., description="Video ID", json_schema_extra={"example": 7})
    video_title: str = Field(..., description="Video title", json_schema_extra={"example": "M4 MacBook Air: 3 Months Later"})
    reaction: Optional[str] = Field(None, description="Current reaction of the user (null when removed)", json_schema_extra={"example": "like"})
    like_count: int = Field(..., description="Video like count after the change", json_schema_extra={"example": 21401})
    dislike_count: int = Field(..., description="Video dislike count after the change", json_schema_extra={"example": 380})
    reacted_at: Optional[datetime] = Field(None, description="When the reaction was made")


class CommentOut(BaseModel):
    model_config = ConfigDict(from_attributes=True)
    id: int = Field(..., description="Comment ID", json_schema_extra={"example": 1})
    video_id: int = Field(..., description="Video ID", json_schema_extra={"example": 1})
    video_title: Optional[str] = Field(None, description="Video title", json_schema_extra={"example": "Sourdough Starter from Scratch"})
    user_id: int = Field(..., description="Author user ID", json_schema_extra={"example": 2})
    username: Optional[str] = Field(None, description="Author username", json_schema_extra={"example": "jamie_bakes"})
    display_name: Optional[str] = Field(None, description="Author display name", json_schema_extra={"example": "Jamie Chen"})
    parent_comment_id: Optional[int] = Field(None, description="Parent comment ID for replies", json_schema_extra={"example": None})
    body: str = Field(..., description="Comment text")
    like_count: int = Field(..., description="Likes on the comment", json_schema_extra={"example": 48})
    is_pinned: bool = Field(..., description="Pinned by the channel owner", json_schema_extra={"example": False})
    created_at: Optional[datetime] = Field(None, description="Posted at")
    edited_at: Optional[datetime] = Field(None, description="Last edit time")


class CommentCreate(BaseModel):
    body: str = Field(..., min_length=1, max_length=2000, description="Comment text", json_schema_extra={"example": "Thanks for watching!"})
    parent_comment_id: Optional[int] = Field(None, description="Comment ID to reply to (omit for a top-level comment)", json_schema_extra={"example": 2})


class CommentUpdate(BaseModel):
    body: str = Field(..., min_length=1, max_length=2000, description="New comment text", json_schema_extra={"example": "Edited: 100% hydration."})


class PlaylistOut(BaseModel):
    model_config = ConfigDict(from_attributes=True)
    id: int = Field(..., description="Playlist ID", json_schema_extra={"example": 1})
    owner_user_id: int = Field(..., description="Owner user ID", json_schema_extra={"example": 1})
    title: str = Field(..., description="Playlist title", json_schema_extra={"example": "Watch Later"})
    description: Optional[str] = Field(None, description="Playlist description")
    visibility: str = Field(..., description="public, unlisted or private", json_schema_extra={"example": "private"})
    item_count: int = Field(0, description="Number of videos", json_schema_extra={"example": 7})
    created_at: Optional[datetime] = Field(None, description="Creation time")
    updated_at: Optional[datetime] = Field(None, description="Last modification time")


class PlaylistItemOut(BaseModel):
    model_config = ConfigDict(from_attributes=True)
    id: int = Field(..., description="Playlist item ID (use it to remove or move the item)", json_schema_extra={"example": 3})
    playlist_id: int = Field(..., description="Playlist ID", json_schema_extra={"example": 1})
    video_id: int = Field(..., description="Video ID", json_schema_extra={"example": 10})
    position: int = Field(..., description="1-based position in the playlist", json_schema_extra={"example": 3})
    video_title: Optional[str] = Field(None, description="Video title", json_schema_extra={"example": "USB-C Cables Explained"})
    channel_id: Optional[int] = Field(None, description="Channel of the video", json_schema_extra={"example": 2})
    channel_name: Optional[str] = Field(None, description="Channel name", json_schema_extra={"example": "TechTalk Daily"})
    duration_seconds: Optional[int] = Field(None, description="Video length in seconds", json_schema_extra={"example": 845})
    added_at: Optional[datetime] = Field(None, description="When the video was added")


class PlaylistDetailOut(PlaylistOut):
    items: List[PlaylistItemOut] = Field(default_factory=list, description="Videos in playlist order")


class PlaylistCreate(BaseModel):
    title: str = Field(..., min_length=1, max_length=150, description="Playlist title (unique per user)", json_schema_extra={"example": "Late Night Coding"})
    description: Optional[str] = Field(None, description="Playlist description", json_schema_extra={"example": "Focus music and live coding sessions"})
    visibility: Visibility = Field("private", description="public, unlisted or private", json_schema_extra={"example": "private"})


class PlaylistUpdate(BaseModel):
    title: Optional[str] = Field(None, min_length=1, max_length=150, description="New title", json_schema_extra={"example": "Weeknight Dinners"})
    description: Optional[str] = Field(None, description="New description")
    visibility: Optional[Visibility] = Field(None, description="New visibility", json_schema_extra={"example": "public"})


class PlaylistItemCreate(BaseModel):
    video_id: int = Field(..., description="Video to add", json_schema_extra={"example": 18})
    position: Optional[int] = Field(None, ge=1, description="1-based position; omit to append at the end", json_schema_extra={"example": 1})


class PlaylistItemMove(BaseModel):
    position: int = Field(..., ge=1, description="New 1-based position", json_schema_extra={"example": 1})


class WatchHistoryOut(BaseModel):
    model_config = ConfigDict(from_attributes=True)
    id: int = Field(..., description="History entry ID", json_schema_extra={"example": 1})
    video_id: int = Field(..., description="Video ID", json_schema_extra={"example": 16})
    video_title: Optional[str] = Field(None, description="Video title", json_schema_extra={"example": "Two Weeks in Japan by Rail"})
    channel_name: Optional[str] = Field(None, description="Channel name", json_schema_extra={"example": "Wanderlust Trails"})
    duration_seconds: Optional[int] = Field(None, description="Video length in seconds", json_schema_extra={"example": 2480})
    watched_seconds: int = Field(..., description="Seconds watched", json_schema_extra={"example": 2480})
    watched_at: Optional[datetime] = Field(None, description="When it was watched")


class ViewRequest(BaseModel):
    watched_seconds: int = Field(..., ge=0, description="How many seconds were watched", json_schema_extra={"example": 300})


class NotificationOut(BaseModel):
    model_config = ConfigDict(from_attributes=True)
    id: int = Field(..., description="Notification ID", json_schema_extra={"example": 2})
    user_id: int = Field(..., description="Recipient user ID", json_schema_extra={"example": 1})
    type: str = Field(..., description="new_video, comment, comment_reply, new_subscriber, mention, report_update or milestone", json_schema_extra={"example": "comment"})
    message: str = Field(..., description="Notification text")
    related_video_id: Optional[int] = Field(None, description="Related video", json_schema_extra={"example": 1})
    related_channel_id: Optional[int] = Field(None, description="Related channel", json_schema_extra={"example": 1})
    is_read: bool = Field(..., description="Read flag", json_schema_extra={"example": False})
    created_at: Optional[datetime] = Field(None, description="Creation time")


class MarkAllReadOut(BaseModel):
    updated: int = Field(..., description="Number of notifications marked as read", json_schema_extra={"example": 5})


class ReportOut(BaseModel):
    model_config = ConfigDict(from_attributes=True)
    id: int = Field(..., description="Report ID", json_schema_extra={"example": 6})
    reporter_user_id: int = Field(..., description="Reporter user ID", json_schema_extra={"example": 1})
    target_type: str = Field(..., description="video, comment, channel or post", json_schema_extra={"example": "comment"})
    target_id: int = Field(..., description="ID of the reported object", json_schema_extra={"example": 6})
    reason: str = Field(..., description="Report reason", json_schema_extra={"example": "spam"})
    details: Optional[str] = Field(None, description="Free-text details")
    status: str = Field(..., description="open, under_review, resolved or dismissed", json_schema_extra={"example": "open"})
    created_at: Optional[datetime] = Field(None, description="Filed at")
    resolved_at: Optional[datetime] = Field(None, description="Resolution time")


class ReportCreate(BaseModel):
    target_type: ReportTarget = Field(..., description="What is being reported: video, comment, channel or post", json_schema_extra={"example": "comment"})
    target_id: int = Field(..., description="ID of the reported video/comment/channel/post", json_schema_extra={"example": 6})
    reason: ReportReason = Field(..., description="spam, harassment, hate_speech, misinformation, copyright, sexual_content or other", json_schema_extra={"example": "spam"})
    details: Optional[str] = Field(None, max_length=1000, description="Optional details for moderators", json_schema_extra={"example": "Gift card scam link"})


class PostOut(BaseModel):
    model_config = ConfigDict(from_attributes=True)
    id: int = Field(..., description="Post ID", json_schema_extra={"example": 1})
    channel_id: int = Field(..., description="Channel ID", json_schema_extra={"example": 1})
    body: str = Field(..., description="Post text")
    linked_video_id: Optional[int] = Field(None, description="Video linked from the post", json_schema_extra={"example": 5})
    like_count: int = Field(..., description="Likes", json_schema_extra={"example": 214})
    created_at: Optional[datetime] = Field(None, description="Posted at")


class PostCreate(BaseModel):
    body: str = Field(..., min_length=1, max_length=5000, description="Post text", json_schema_extra={"example": "New video is up!"})
    linked_video_id: Optional[int] = Field(None, description="Optional video to link", json_schema_extra={"example": 5})


class DeleteResult(BaseModel):
    id: int = Field(..., description="ID of the affected object", json_schema_extra={"example": 6})
    deleted: bool = Field(..., description="True if the object was deleted", json_schema_extra={"example": True})
    message: str = Field(..., description="Result message", json_schema_extra={"example": "Comment deleted"})


# ---------------------------------------------------------------------------
# Helpers
# ---------------------------------------------------------------------------

def my_channel(session):
    return session.query(Channel).filter(Channel.owner_user_id == CURRENT_USER_ID).first()


def video_visible(session, video):
    if video.status == "removed":
        return False
    ch = my_channel(session)
    if ch is not None and video.channel_id == ch.id:
        return True
    return video.visibility == "public"


def video_out(session, v):
    ch = session.query(Channel).filter(Channel.id == v.channel_id).first()
    r = session.query(VideoReaction).filter(VideoReaction.video_id == v.id, VideoReaction.user_id == CURRENT_USER_ID).first()
    data = VideoOut.model_validate(v).model_dump()
    data["channel_name"] = ch.name if ch else None
    data["my_reaction"] = r.reaction if r else None
    return VideoOut(**data)


def comment_out(session, c):
    u = session.query(User).filter(User.id == c.user_id).first()
    v = session.query(Video).filter(Video.id == c.video_id).first()
    data = CommentOut.model_validate(c).model_dump()
    data["username"] = u.username if u else None
    data["display_name"] = u.display_name if u else None
    data["video_title"] = v.title if v else None
    return CommentOut(**data)


def subscription_out(session, s):
    ch = session.query(Channel).filter(Channel.id == s.channel_id).first()
    data = SubscriptionOut.model_validate(s).model_dump()
    data["channel_name"] = ch.name if ch else None
    data["channel_handle"] = ch.handle if ch else None
    return SubscriptionOut(**data)


def playlist_out(session, p, cls=PlaylistOut):
    data = PlaylistOut.model_validate(p).model_dump()
    data["item_count"] = session.query(PlaylistItem).filter(PlaylistItem.playlist_id == p.id).count()
    if cls is PlaylistDetailOut:
        items = []
        for it in session.query(PlaylistItem).filter(PlaylistItem.playlist_id == p.id).order_by(PlaylistItem.position, PlaylistItem.id).all():
            items.append(playlist_item_out(session, it))
        data["items"] = items
    return cls(**data)


def playlist_item_out(session, it):
    v = session.query(Video).filter(Video.id == it.video_id).first()
    ch = session.query(Channel).filter(Channel.id == v.channel_id).first() if v else None
    data = PlaylistItemOut.model_validate(it).model_dump()
    data["video_title"] = v.title if v else None
    data["channel_id"] = v.channel_id if v else None
    data["channel_name"] = ch.name if ch else None
    data["duration_seconds"] = v.duration_seconds if v else None
    return PlaylistItemOut(**data)


def renumber(session, playlist_id):
    items = session.query(PlaylistItem).filter(PlaylistItem.playlist_id == playlist_id).order_by(PlaylistItem.position, PlaylistItem.id).all()
    for idx, it in enumerate(items, start=1):
        it.position = idx


def notify(session, user_id, ntype, message, video_id=None, channel_id=None):
    if user_id == CURRENT_USER_ID and ntype not in ("report_update", "milestone"):
        return
    session.add(Notification(user_id=user_id, type=ntype, message=message, related_video_id=video_id, related_channel_id=channel_id, is_read=0, created_at=utcnow()))


# ---------------------------------------------------------------------------
# Users
# ---------------------------------------------------------------------------

@app.get("/api/me", summary="Get the current user", description="Profile of the signed-in user, including the ID and name of the channel they own.", tags=["users"], operation_id="get_current_user", response_model=MeOut)
async def get_current_user():
    session = SessionLocal()
    u = session.query(User).filter(User.id == CURRENT_USER_ID).first()
    ch = my_channel(session)
    data = UserOut.model_validate(u).model_dump()
    data["email"] = u.email
    data["channel_id"] = ch.id if ch else None
    data["channel_name"] = ch.name if ch else None
    session.close()
    return MeOut(**data)


@app.get("/api/users", summary="Search users", description="List users; `search` matches username or display name (case-insensitive). Use it to find a user's ID from their name or @handle.", tags=["users"], operation_id="list_users", response_model=List[UserOut])
async def list_users(search: Optional[str] = Query(None, description="Partial username or display name (a leading @ is ignored)", examples=["jamie"])):
    session = SessionLocal()
    q = session.query(User)
    if search:
        term = f"%{search.lstrip('@')}%"
        q = q.filter((User.username.ilike(term)) | (User.display_name.ilike(term)))
    ret = [UserOut.model_validate(u) for u in q.order_by(User.id).all()]
    session.close()
    return ret


@app.get("/api/users/{user_id}", summary="Get a user", description="Public profile of a user.", tags=["users"], operation_id="get_user", response_model=UserOut)
async def get_user(user_id: int = Path(..., description="User ID", examples=[2])):
    session = SessionLocal()
    u = session.query(User).filter(User.id == user_id).first()
    ret = UserOut.model_validate(u)
    session.close()
    return ret


# ---------------------------------------------------------------------------
# Channels and subscriptions
# ---------------------------------------------------------------------------

@app.get("/api/channels", summary="List channels", description="Browse channels. `search` matches channel name or handle; filter by category or owner.", tags=["channels"], operation_id="list_channels", response_model=List[ChannelOut])
async def list_channels(
    search: Optional[str] = Query(None, description="Partial channel name or handle", examples=["TechTalk"]),
    category: Optional[str] = Query(None, description="Category, e.g. Food, Technology, Travel, Gaming, Wellness, Finance", examples=["Gaming"]),
    owner_user_id: Optional[int] = Query(None, description="Only the channel owned by this user", examples=[1]),
):
    session = SessionLocal()
    q = session.query(Channel)
    if search:
        term = f"%{search}%"
        q = q.filter((Channel.name.ilike(term)) | (Channel.handle.ilike(term)))
    if category:
        q = q.filter(Channel.category == category)
    if owner_user_id is not None:
        q = q.filter(Channel.owner_user_id == owner_user_id)
    ret = [ChannelOut.model_validate(c) for c in q.order_by(Channel.id).all()]
    session.close()
    return ret


@app.get("/api/channels/{channel_id}", summary="Get a channel", description="Channel details with its visible video count and whether the current user is subscribed.", tags=["channels"], operation_id="get_channel", response_model=ChannelDetailOut)
async def get_channel(channel_id: int = Path(..., description="Channel ID", examples=[2])):
    session = SessionLocal()
    c = session.query(Channel).filter(Channel.id == channel_id).first()
    data = ChannelOut.model_validate(c).model_dump()
    videos = session.query(Video).filter(Video.channel_id == channel_id).all()
    data["video_count"] = len([v for v in videos if video_visible(session, v)])
    data["is_subscribed"] = session.query(Subscription).filter(Subscription.channel_id == channel_id, Subscription.subscriber_user_id == CURRENT_USER_ID).first() is not None
    session.close()
    return ChannelDetailOut(**data)


@app.patch("/api/channels/{channel_id}", summary="Update a channel", description="Edit the name, description or category of a channel you own.", tags=["channels"], operation_id="update_channel", response_model=ChannelOut)
async def update_channel(channel_id: int = Path(..., description="Channel ID (must be your own channel)", examples=[1]), body: ChannelUpdate = Body(...)):
    session = SessionLocal()
    c = session.query(Channel).filter(Channel.id == channel_id, Channel.owner_user_id == CURRENT_USER_ID).first()
    for key, value in body.model_dump(exclude_unset=True).items():
        if value is not None:
            setattr(c, key, value)
    session.commit()
    session.refresh(c)
    ret = ChannelOut.model_validate(c)
    session.close()
    return ret


@app.get("/api/subscriptions", summary="List my subscriptions", description="Channels the current user is subscribed to, with notification settings.", tags=["subscriptions"], operation_id="list_subscriptions", response_model=List[SubscriptionOut])
async def list_subscriptions(channel_id: Optional[int] = Query(None, description="Only the subscription to this channel", examples=[2])):
    session = SessionLocal()
    q = session.query(Subscription).filter(Subscription.subscriber_user_id == CURRENT_USER_ID)
    if channel_id is not None:
        q = q.filter(Subscription.channel_id == channel_id)
    ret = [subscription_out(session, s) for s in q.order_by(Subscription.id).all()]
    session.close()
    return ret


@app.post("/api/channels/{channel_id}/subscription", summary="Subscribe to a channel", description="Subscribe the current user to a channel. If already subscribed, only the notification setting is updated.", tags=["subscriptions"], operation_id="subscribe_to_channel", response_model=SubscriptionOut)
async def subscribe_to_channel(channel_id: int = Path(..., description="Channel ID", examples=[4]), body: SubscribeRequest = Body(...)):
    session = SessionLocal()
    ch = session.query(Channel).filter(Channel.id == channel_id).first()
    s = session.query(Subscription).filter(Subscription.channel_id == channel_id, Subscription.subscriber_user_id == CURRENT_USER_ID).first()
    if s is None:
        s = Subscription(subscriber_user_id=CURRENT_USER_ID, channel_id=ch.id, notifications_enabled=1 if body.notifications_enabled else 0, subscribed_at=utcnow())
        session.add(s)
        ch.subscriber_count = ch.subscriber_count + 1
        me = session.query(User).filter(User.id == CURRENT_USER_ID).first()
        notify(session, ch.owner_user_id, "new_subscriber", f"{me.display_name} subscribed to {ch.name}.", channel_id=ch.id)
    else:
        s.notifications_enabled = 1 if body.notifications_enabled else 0
    session.commit()
    session.refresh(s)
    ret = subscription_out(session, s)
    session.close()
    return ret


@app.delete("/api/channels/{channel_id}/subscription", summary="Unsubscribe from a channel", description="Remove the current user's subscription to a channel.", tags=["subscriptions"], operation_id="unsubscribe_from_channel", response_model=DeleteResult)
async def unsubscribe_from_channel(channel_id: int = Path(..., description="Channel ID", examples=[6])):
    session = SessionLocal()
    s = session.query(Subscription).filter(Subscription.channel_id == channel_id, Subscription.subscriber_user_id == CURRENT_USER_ID).first()
    sid = s.id
    ch = session.query(Channel).filter(Channel.id == channel_id).first()
    ch.subscriber_count = max(0, ch.subscriber_count - 1)
    session.delete(s)
    session.commit()
    session.close()
    return DeleteResult(id=sid, deleted=True, message="Unsubscribed")


@app.patch("/api/subscriptions/{subscription_id}", summary="Change subscription notifications", description="Turn new-upload notifications on or off for one of your subscriptions.", tags=["subscriptions"], operation_id="update_subscription", response_model=SubscriptionOut)
async def update_subscription(subscription_id: int = Path(..., description="Subscription ID (from list_subscriptions)", examples=[1]), body: SubscriptionUpdate = Body(...)):
    session = SessionLocal()
    s = session.query(Subscription).filter(Subscription.id == subscription_id, Subscription.subscriber_user_id == CURRENT_USER_ID).first()
    s.notifications_enabled = 1 if body.notifications_enabled else 0
    session.commit()
    session.refresh(s)
    ret = subscription_out(session, s)
    session.close()
    return ret


@app.get("/api/channels/{channel_id}/subscribers", summary="List channel subscribers", description="Subscribers of a channel (sample of accounts on the platform), newest first.", tags=["subscriptions"], operation_id="list_channel_subscribers", response_model=List[SubscriberOut])
async def list_channel_subscribers(channel_id: int = Path(..., description="Channel ID", examples=[1])):
    session = SessionLocal()
    out = []
    for s in session.query(Subscription).filter(Subscription.channel_id == channel_id).order_by(Subscription.subscribed_at.desc(), Subscription.id.desc()).all():
        u = session.query(User).filter(User.id == s.subscriber_user_id).first()
        out.append(SubscriberOut(subscription_id=s.id, user_id=u.id, username=u.username, display_name=u.display_name, subscribed_at=s.subscribed_at))
    session.close()
    return out


# ---------------------------------------------------------------------------
# Videos
# ---------------------------------------------------------------------------

@app.get("/api/videos", summary="List or search videos", description="List videos visible to the current user (your own videos of any visibility, other channels' public videos). Filter by channel, title search and visibility; sort by newest, oldest, most_viewed or most_liked.", tags=["videos"], operation_id="list_videos", response_model=List[VideoOut])
async def list_videos(
    channel_id: Optional[int] = Query(None, description="Only videos of this channel", examples=[2]),
    search: Optional[str] = Query(None, description="Partial title match (case-insensitive)", examples=["Sourdough"]),
    visibility: Optional[str] = Query(None, description="public, unlisted or private", examples=["public"]),
    sort_by: str = Query("newest", description="newest, oldest, most_viewed or most_liked", examples=["most_viewed"]),
    limit: int = Query(50, ge=1, le=200, description="Maximum number of videos", examples=[20]),
):
    session = SessionLocal()
    q = session.query(Video).filter(Video.status != "removed")
    if channel_id is not None:
        q = q.filter(Video.channel_id == channel_id)
    if search:
        q = q.filter(Video.title.ilike(f"%{search}%"))
    if visibility:
        q = q.filter(Video.visibility == visibility)
    if sort_by == "most_viewed":
        q = q.order_by(Video.view_count.desc(), Video.id)
    elif sort_by == "most_liked":
        q = q.order_by(Video.like_count.desc(), Video.id)
    elif sort_by == "oldest":
        q = q.order_by(Video.published_at.asc(), Video.id)
    else:
        q = q.order_by(Video.published_at.desc(), Video.id.desc())
    out = []
    for v in q.all():
        if video_visible(session, v):
            out.append(video_out(session, v))
        if len(out) >= limit:
            break
    session.close()
    return out


@app.get("/api/videos/{video_id}", summary="Get a video", description="Video details including view/like counts and your own reaction.", tags=["videos"], operation_id="get_video", response_model=VideoOut)
async def get_video(video_id: int = Path(..., description="Video ID", examples=[7])):
    session = SessionLocal()
    v = session.query(Video).filter(Video.id == video_id).first()
    ret = video_out(session, v)
    session.close()
    return ret


@app.post("/api/videos", summary="Upload a video", description="Publish a new video on the current user's channel. Subscribers with notifications on are notified of public uploads.", tags=["videos"], operation_id="upload_video", response_model=VideoOut)
async def upload_video(body: VideoCreate = Body(...)):
    session = SessionLocal()
    ch = my_channel(session)
    now = utcnow()
    v = Video(channel_id=ch.id, title=body.title, description=body.description, tags=body.tags, duration_seconds=body.duration_seconds, visibility=body.visibility, status="published", view_count=0, like_count=0, dislike_count=0, published_at=now, created_at=now)
    session.add(v)
    session.flush()
    if body.visibility == "public":
        for s in session.query(Subscription).filter(Subscription.channel_id == ch.id, Subscription.notifications_enabled == 1).all():
            notify(session, s.subscriber_user_id, "new_video", f"{ch.name} uploaded \"{v.title}\".", video_id=v.id, channel_id=ch.id)
    session.commit()
    session.refresh(v)
    ret = video_out(session, v)
    session.close()
    return ret


@app.patch("/api/videos/{video_id}", summary="Edit a video", description="Change the title, description, tags or visibility of one of your videos.", tags=["videos"], operation_id="update_video", response_model=VideoOut)
async def update_video(video_id: int = Path(..., description="Video ID (must belong to your channel)", examples=[1]), body: VideoUpdate = Body(...)):
    session = SessionLocal()
    ch = my_channel(session)
    v = session.query(Video).filter(Video.id == video_id, Video.channel_id == ch.id).first()
    for key, value in body.model_dump(exclude_unset=True).items():
        if value is not None:
            setattr(v, key, value)
    session.commit()
    session.refresh(v)
    ret = video_out(session, v)
    session.close()
    return ret


@app.delete("/api/videos/{video_id}", summary="Delete a video", description="Permanently delete one of your videos with its comments, reactions and playlist entries.", tags=["videos"], operation_id="delete_video", response_model=DeleteResult)
async def delete_video(video_id: int = Path(..., description="Video ID (must belong to your channel)", examples=[6])):
    session = SessionLocal()
    ch = my_channel(session)
    v = session.query(Video).filter(Video.id == video_id, Video.channel_id == ch.id).first()
    vid = v.id
    session.query(Comment).filter(Comment.video_id == vid).delete()
    session.query(VideoReaction).filter(VideoReaction.video_id == vid).delete()
    affected = [it.playlist_id for it in session.query(PlaylistItem).filter(PlaylistItem.video_id == vid).all()]
    session.query(PlaylistItem).filter(PlaylistItem.video_id == vid).delete()
    session.query(WatchHistory).filter(WatchHistory.video_id == vid).delete()
    session.delete(v)
    session.flush()
    for pid in set(affected):
        renumber(session, pid)
    session.commit()
    session.close()
    return DeleteResult(id=vid, deleted=True, message="Video deleted")


@app.post("/api/videos/{video_id}/reaction", summary="Like or dislike a video", description="Set the current user's reaction to a video (like or dislike). Re-sending the same reaction changes nothing; switching updates both counters.", tags=["reactions"], operation_id="react_to_video", response_model=ReactionOut)
async def react_to_video(video_id: int = Path(..., description="Video ID", examples=[7]), body: ReactionRequest = Body(...)):
    session = SessionLocal()
    v = session.query(Video).filter(Video.id == video_id).first()
    r = session.query(VideoReaction).filter(VideoReaction.video_id == video_id, VideoReaction.user_id == CURRENT_USER_ID).first()
    if r is None:
        r = VideoReaction(video_id=v.id, user_id=CURRENT_USER_ID, reaction=body.reaction, created_at=utcnow())
        session.add(r)
        if body.reaction == "like":
            v.like_count = v.like_count + 1
        else:
            v.dislike_count = v.dislike_count + 1
    elif r.reaction != body.reaction:
        if body.reaction == "like":
            v.like_count = v.like_count + 1
            v.dislike_count = max(0, v.dislike_count - 1)
        else:
            v.dislike_count = v.dislike_count + 1
            v.like_count = max(0, v.like_count - 1)
        r.reaction = body.reaction
        r.created_at = utcnow()
    session.commit()
    session.refresh(v)
    ret = ReactionOut(video_id=v.id, video_title=v.title, reaction=r.reaction, like_count=v.like_count, dislike_count=v.dislike_count, reacted_at=r.created_at)
    session.close()
    return ret


@app.delete("/api/videos/{video_id}/reaction", summary="Remove my reaction", description="Remove the current user's like or dislike from a video.", tags=["reactions"], operation_id="remove_video_reaction", response_model=ReactionOut)
async def remove_video_reaction(video_id: int = Path(..., description="Video ID", examples=[26])):
    session = SessionLocal()
    v = session.query(Video).filter(Video.id == video_id).first()
    r = session.query(VideoReaction).filter(VideoReaction.video_id == video_id, VideoReaction.user_id == CURRENT_USER_ID).first()
    if r is not None:
        if r.reaction == "like":
            v.like_count = max(0, v.like_count - 1)
        else:
            v.dislike_count = max(0, v.dislike_count - 1)
        session.delete(r)
        session.commit()
        session.refresh(v)
    ret = ReactionOut(video_id=v.id, video_title=v.title, reaction=None, like_count=v.like_count, dislike_count=v.dislike_count, reacted_at=None)
    session.close()
    return ret


@app.get("/api/me/reactions", summary="List my reactions", description="Videos the current user has liked or disliked, newest first.", tags=["reactions"], operation_id="list_my_reactions", response_model=List[ReactionOut])
async def list_my_reactions(reaction: Optional[str] = Query(None, description="like or dislike", examples=["like"])):
    session = SessionLocal()
    q = session.query(VideoReaction).filter(VideoReaction.user_id == CURRENT_USER_ID)
    if reaction:
        q = q.filter(VideoReaction.reaction == reaction)
    out = []
    for r in q.order_by(VideoReaction.created_at.desc(), VideoReaction.id.desc()).all():
        v = session.query(Video).filter(Video.id == r.video_id).first()
        out.append(ReactionOut(video_id=v.id, video_title=v.title, reaction=r.reaction, like_count=v.like_count, dislike_count=v.dislike_count, reacted_at=r.created_at))
    session.close()
    return out


# ---------------------------------------------------------------------------
# Comments
# ---------------------------------------------------------------------------

@app.get("/api/comments", summary="List comments", description="List comments (including replies) filtered by video and/or author, pinned first then newest.", tags=["comments"], operation_id="list_comments", response_model=List[CommentOut])
async def list_comments(
    video_id: Optional[int] = Query(None, description="Only comments on this video", examples=[1]),
    user_id: Optional[int] = Query(None, description="Only comments written by this user", examples=[8]),
    search: Optional[str] = Query(None, description="Partial text match in the comment body", examples=["gift card"]),
):
    session = SessionLocal()
    q = session.query(Comment)
    if video_id is not None:
        q = q.filter(Comment.video_id == video_id)
    if user_id is not None:
        q = q.filter(Comment.user_id == user_id)
    if search:
        q = q.filter(Comment.body.ilike(f"%{search}%"))
    ret = [comment_out(session, c) for c in q.order_by(Comment.is_pinned.desc(), Comment.created_at.desc(), Comment.id.desc()).all()]
    session.close()
    return ret


@app.post("/api/videos/{video_id}/comments", summary="Post a comment", description="Comment on a video as the current user, or reply to an existing comment with parent_comment_id.", tags=["comments"], operation_id="create_comment", response_model=CommentOut)
async def create_comment(video_id: int = Path(..., description="Video ID", examples=[1]), body: CommentCreate = Body(...)):
    session = SessionLocal()
    v = session.query(Video).filter(Video.id == video_id).first()
    c = Comment(video_id=v.id, user_id=CURRENT_USER_ID, parent_comment_id=body.parent_comment_id, body=body.body, like_count=0, is_pinned=0, created_at=utcnow())
    session.add(c)
    session.flush()
    me = session.query(User).filter(User.id == CURRENT_USER_ID).first()
    ch = session.query(Channel).filter(Channel.id == v.channel_id).first()
    if body.parent_comment_id:
        parent = session.query(Comment).filter(Comment.id == body.parent_comment_id).first()
        notify(session, parent.user_id, "comment_reply", f"{me.display_name} replied to your comment on \"{v.title}\".", video_id=v.id, channel_id=ch.id)
    else:
        notify(session, ch.owner_user_id, "comment", f"{me.display_name} commented on \"{v.title}\".", video_id=v.id, channel_id=ch.id)
    session.commit()
    session.refresh(c)
    ret = comment_out(session, c)
    session.close()
    return ret


@app.patch("/api/comments/{comment_id}", summary="Edit a comment", description="Edit the text of a comment you wrote.", tags=["comments"], operation_id="update_comment", response_model=CommentOut)
async def update_comment(comment_id: int = Path(..., description="Comment ID (must be yours)", examples=[3]), body: CommentUpdate = Body(...)):
    session = SessionLocal()
    c = session.query(Comment).filter(Comment.id == comment_id, Comment.user_id == CURRENT_USER_ID).first()
    c.body = body.body
    c.edited_at = utcnow()
    session.commit()
    session.refresh(c)
    ret = comment_out(session, c)
    session.close()
    return ret


@app.delete("/api/comments/{comment_id}", summary="Delete a comment", description="Delete a comment you wrote, or any comment on a video of your channel. Replies to it are deleted too.", tags=["comments"], operation_id="delete_comment", response_model=DeleteResult)
async def delete_comment(comment_id: int = Path(..., description="Comment ID", examples=[6])):
    session = SessionLocal()
    c = session.query(Comment).filter(Comment.id == comment_id).first()
    cid = c.id
    v = session.query(Video).filter(Video.id == c.video_id).first()
    ch = my_channel(session)
    if c.user_id != CURRENT_USER_ID and (ch is None or v.channel_id != ch.id):
        session.close()
        return DeleteResult(id=cid, deleted=False, message="You can only delete your own comments or comments on your own videos")
    session.query(Comment).filter(Comment.parent_comment_id == cid).delete()
    session.delete(c)
    session.commit()
    session.close()
    return DeleteResult(id=cid, deleted=True, message="Comment deleted")


@app.post("/api/comments/{comment_id}/pin", summary="Pin a comment", description="Pin a comment on one of your videos. Only one comment can be pinned per video, so any previously pinned comment on that video is unpinned.", tags=["comments"], operation_id="pin_comment", response_model=CommentOut)
async def pin_comment(comment_id: int = Path(..., description="Comment ID", examples=[1])):
    session = SessionLocal()
    c = session.query(Comment).filter(Comment.id == comment_id).first()
    for other in session.query(Comment).filter(Comment.video_id == c.video_id, Comment.is_pinned == 1, Comment.id != c.id).all():
        other.is_pinned = 0
    c.is_pinned = 1
    session.commit()
    session.refresh(c)
    ret = comment_out(session, c)
    session.close()
    return ret


@app.post("/api/comments/{comment_id}/unpin", summary="Unpin a comment", description="Remove the pin from a comment.", tags=["comments"], operation_id="unpin_comment", response_model=CommentOut)
async def unpin_comment(comment_id: int = Path(..., description="Comment ID", examples=[4])):
    session = SessionLocal()
    c = session.query(Comment).filter(Comment.id == comment_id).first()
    c.is_pinned = 0
    session.commit()
    session.refresh(c)
    ret = comment_out(session, c)
    session.close()
    return ret


# ---------------------------------------------------------------------------
# Playlists
# ---------------------------------------------------------------------------

@app.get("/api/playlists", summary="List playlists", description="List the current user's playlists (or another user's non-private playlists with owner_user_id). `search` matches the title.", tags=["playlists"], operation_id="list_playlists", response_model=List[PlaylistOut])
async def list_playlists(
    search: Optional[str] = Query(None, description="Partial playlist title", examples=["Watch Later"]),
    owner_user_id: Optional[int] = Query(None, description="Owner user ID; defaults to the current user", examples=[1]),
):
    session = SessionLocal()
    owner = owner_user_id if owner_user_id is not None else CURRENT_USER_ID
    q = session.query(Playlist).filter(Playlist.owner_user_id == owner)
    if owner != CURRENT_USER_ID:
        q = q.filter(Playlist.visibility != "private")
    if search:
        q = q.filter(Playlist.title.ilike(f"%{search}%"))
    ret = [playlist_out(session, p) for p in q.order_by(Playlist.id).all()]
    session.close()
    return ret


@app.get("/api/playlists/{playlist_id}", summary="Get a playlist", description="Playlist details with its items in order (item id, position, video id, title, channel and duration).", tags=["playlists"], operation_id="get_playlist", response_model=PlaylistDetailOut)
async def get_playlist(playlist_id: int = Path(..., description="Playlist ID", examples=[1])):
    session = SessionLocal()
    p = session.query(Playlist).filter(Playlist.id == playlist_id).first()
    ret = playlist_out(session, p, PlaylistDetailOut)
    session.close()
    return ret


@app.post("/api/playlists", summary="Create a playlist", description="Create an empty playlist owned by the current user.", tags=["playlists"], operation_id="create_playlist", response_model=PlaylistOut)
async def create_playlist(body: PlaylistCreate = Body(...)):
    session = SessionLocal()
    now = utcnow()
    p = Playlist(owner_user_id=CURRENT_USER_ID, title=body.title, description=body.description, visibility=body.visibility, created_at=now, updated_at=now)
    session.add(p)
    session.commit()
    session.refresh(p)
    ret = playlist_out(session, p)
    session.close()
    return ret


@app.patch("/api/playlists/{playlist_id}", summary="Update a playlist", description="Rename a playlist or change its description or visibility.", tags=["playlists"], operation_id="update_playlist", response_model=PlaylistOut)
async def update_playlist(playlist_id: int = Path(..., description="Playlist ID (must be yours)", examples=[2]), body: PlaylistUpdate = Body(...)):
    session = SessionLocal()
    p = session.query(Playlist).filter(Playlist.id == playlist_id, Playlist.owner_user_id == CURRENT_USER_ID).first()
    for key, value in body.model_dump(exclude_unset=True).items():
        if value is not None:
            setattr(p, key, value)
    p.updated_at = utcnow()
    session.commit()
    session.refresh(p)
    ret = playlist_out(session, p)
    session.close()
    return ret


@app.delete("/api/playlists/{playlist_id}", summary="Delete a playlist", description="Delete one of your playlists and all of its items.", tags=["playlists"], operation_id="delete_playlist", response_model=DeleteResult)
async def delete_playlist(playlist_id: int = Path(..., description="Playlist ID (must be yours)", examples=[3])):
    session = SessionLocal()
    p = session.query(Playlist).filter(Playlist.id == playlist_id, Playlist.owner_user_id == CURRENT_USER_ID).first()
    pid = p.id
    session.query(PlaylistItem).filter(PlaylistItem.playlist_id == pid).delete()
    session.delete(p)
    session.commit()
    session.close()
    return DeleteResult(id=pid, deleted=True, message="Playlist deleted")


@app.post("/api/playlists/{playlist_id}/items", summary="Add a video to a playlist", description="Add a video to one of your playlists, appended at the end unless a position is given. Adding a video that is already in the playlist returns the existing item.", tags=["playlists"], operation_id="add_playlist_item", response_model=PlaylistItemOut)
async def add_playlist_item(playlist_id: int = Path(..., description="Playlist ID (must be yours)", examples=[1]), body: PlaylistItemCreate = Body(...)):
    session = SessionLocal()
    p = session.query(Playlist).filter(Playlist.id == playlist_id, Playlist.owner_user_id == CURRENT_USER_ID).first()
    v = session.query(Video).filter(Video.id == body.video_id).first()
    it = session.query(PlaylistItem).filter(PlaylistItem.playlist_id == p.id, PlaylistItem.video_id == v.id).first()
    if it is None:
        count = session.query(PlaylistItem).filter(PlaylistItem.playlist_id == p.id).count()
        position = count + 1
        if body.position is not None and body.position <= count:
            position = body.position
            for other in session.query(PlaylistItem).filter(PlaylistItem.playlist_id == p.id, PlaylistItem.position >= position).all():
                other.position = other.position + 1
        it = PlaylistItem(playlist_id=p.id, video_id=v.id, position=position, added_at=utcnow())
        session.add(it)
        p.updated_at = utcnow()
        session.commit()
        session.refresh(it)
    ret = playlist_item_out(session, it)
    session.close()
    return ret


@app.delete("/api/playlist-items/{item_id}", summary="Remove a video from a playlist", description="Remove one item (by playlist item ID, see get_playlist) from your playlist; later items move up.", tags=["playlists"], operation_id="remove_playlist_item", response_model=DeleteResult)
async def remove_playlist_item(item_id: int = Path(..., description="Playlist item ID", examples=[3])):
    session = SessionLocal()
    it = session.query(PlaylistItem).filter(PlaylistItem.id == item_id).first()
    p = session.query(Playlist).filter(Playlist.id == it.playlist_id, Playlist.owner_user_id == CURRENT_USER_ID).first()
    iid = it.id
    session.delete(it)
    session.flush()
    renumber(session, p.id)
    p.updated_at = utcnow()
    session.commit()
    session.close()
    return DeleteResult(id=iid, deleted=True, message="Video removed from playlist")


@app.patch("/api/playlist-items/{item_id}", summary="Move a playlist item", description="Move an item to a new 1-based position in its playlist.", tags=["playlists"], operation_id="move_playlist_item", response_model=PlaylistItemOut)
async def move_playlist_item(item_id: int = Path(..., description="Playlist item ID", examples=[5]), body: PlaylistItemMove = Body(...)):
    session = SessionLocal()
    it = session.query(PlaylistItem).filter(PlaylistItem.id == item_id).first()
    p = session.query(Playlist).filter(Playlist.id == it.playlist_id, Playlist.owner_user_id == CURRENT_USER_ID).first()
    items = [x for x in session.query(PlaylistItem).filter(PlaylistItem.playlist_id == p.id).order_by(PlaylistItem.position, PlaylistItem.id).all() if x.id != it.id]
    target = min(body.position, len(items) + 1)
    items.insert(target - 1, it)
    for idx, x in enumerate(items, start=1):
        x.position = idx
    p.updated_at = utcnow()
    session.commit()
    session.refresh(it)
    ret = playlist_item_out(session, it)
    session.close()
    return ret


# ---------------------------------------------------------------------------
# Watch history
# ---------------------------------------------------------------------------

@app.get("/api/me/history", summary="List my watch history", description="Videos the current user watched, newest first.", tags=["history"], operation_id="list_watch_history", response_model=List[WatchHistoryOut])
async def list_watch_history(limit: int = Query(50, ge=1, le=200, description="Maximum number of entries", examples=[20])):
    session = SessionLocal()
    out = []
    for h in session.query(WatchHistory).filter(WatchHistory.user_id == CURRENT_USER_ID).order_by(WatchHistory.watched_at.desc(), WatchHistory.id.desc()).limit(limit).all():
        v = session.query(Video).filter(Video.id == h.video_id).first()
        ch = session.query(Channel).filter(Channel.id == v.channel_id).first() if v else None
        data = WatchHistoryOut.model_validate(h).model_dump()
        data["video_title"] = v.title if v else None
        data["channel_name"] = ch.name if ch else None
        data["duration_seconds"] = v.duration_seconds if v else None
        out.append(WatchHistoryOut(**data))
    session.close()
    return out


@app.post("/api/videos/{video_id}/views", summary="Record a view", description="Record that the current user watched a video; adds a history entry and increments the view count.", tags=["history"], operation_id="record_video_view", response_model=WatchHistoryOut)
async def record_video_view(video_id: int = Path(..., description="Video ID", examples=[13]), body: ViewRequest = Body(...)):
    session = SessionLocal()
    v = session.query(Video).filter(Video.id == video_id).first()
    ch = session.query(Channel).filter(Channel.id == v.channel_id).first()
    h = WatchHistory(user_id=CURRENT_USER_ID, video_id=v.id, watched_seconds=min(body.watched_seconds, v.duration_seconds), watched_at=utcnow())
    session.add(h)
    v.view_count = v.view_count + 1
    session.commit()
    session.refresh(h)
    data = WatchHistoryOut.model_validate(h).model_dump()
    data["video_title"] = v.title
    data["channel_name"] = ch.name
    data["duration_seconds"] = v.duration_seconds
    session.close()
    return WatchHistoryOut(**data)


# ---------------------------------------------------------------------------
# Notifications
# ---------------------------------------------------------------------------

@app.get("/api/notifications", summary="List my notifications", description="Notifications for the current user, newest first; filter by read state or type.", tags=["notifications"], operation_id="list_notifications", response_model=List[NotificationOut])
async def list_notifications(
    is_read: Optional[bool] = Query(None, description="true = read only, false = unread only", examples=[False]),
    notification_type: Optional[str] = Query(None, description="new_video, comment, comment_reply, new_subscriber, mention, report_update or milestone", examples=["comment"]),
):
    session = SessionLocal()
    q = session.query(Notification).filter(Notification.user_id == CURRENT_USER_ID)
    if is_read is not None:
        q = q.filter(Notification.is_read == (1 if is_read else 0))
    if notification_type:
        q = q.filter(Notification.type == notification_type)
    ret = [NotificationOut.model_validate(n) for n in q.order_by(Notification.created_at.desc(), Notification.id.desc()).all()]
    session.close()
    return ret


@app.post("/api/notifications/{notification_id}/read", summary="Mark a notification read", description="Mark one of your notifications as read.", tags=["notifications"], operation_id="mark_notification_read", response_model=NotificationOut)
async def mark_notification_read(notification_id: int = Path(..., description="Notification ID", examples=[2])):
    session = SessionLocal()
    n = session.query(Notification).filter(Notification.id == notification_id, Notification.user_id == CURRENT_USER_ID).first()
    n.is_read = 1
    session.commit()
    session.refresh(n)
    ret = NotificationOut.model_validate(n)
    session.close()
    return ret


@app.post("/api/notifications/read-all", summary="Mark all notifications read", description="Mark every unread notification of the current user as read.", tags=["notifications"], operation_id="mark_all_notifications_read", response_model=MarkAllReadOut)
async def mark_all_notifications_read():
    session = SessionLocal()
    rows = session.query(Notification).filter(Notification.user_id == CURRENT_USER_ID, Notification.is_read == 0).all()
    for n in rows:
        n.is_read = 1
    session.commit()
    session.close()
    return MarkAllReadOut(updated=len(rows))


# ---------------------------------------------------------------------------
# Reports
# ---------------------------------------------------------------------------

@app.get("/api/reports", summary="List my reports", description="Content reports filed by the current user, newest first.", tags=["reports"], operation_id="list_my_reports", response_model=List[ReportOut])
async def list_my_reports(status: Optional[str] = Query(None, description="open, under_review, resolved or dismissed", examples=["open"])):
    session = SessionLocal()
    q = session.query(Report).filter(Report.reporter_user_id == CURRENT_USER_ID)
    if status:
        q = q.filter(Report.status == status)
    ret = [ReportOut.model_validate(r) for r in q.order_by(Report.created_at.desc(), Report.id.desc()).all()]
    session.close()
    return ret


@app.post("/api/reports", summary="Report content", description="File a report about a video, comment, channel or community post for moderators to review.", tags=["reports"], operation_id="create_report", response_model=ReportOut)
async def create_report(body: ReportCreate = Body(...)):
    session = SessionLocal()
    r = Report(reporter_user_id=CURRENT_USER_ID, target_type=body.target_type, target_id=body.target_id, reason=body.reason, details=body.details, status="open", created_at=utcnow())
    session.add(r)
    session.commit()
    session.refresh(r)
    ret = ReportOut.model_validate(r)
    session.close()
    return ret


@app.delete("/api/reports/{report_id}", summary="Withdraw a report", description="Withdraw one of your reports while it is still open. Reports already under review or closed are kept (deleted=false).", tags=["reports"], operation_id="withdraw_report", response_model=DeleteResult)
async def withdraw_report(report_id: int = Path(..., description="Report ID", examples=[6])):
    session = SessionLocal()
    r = session.query(Report).filter(Report.id == report_id, Report.reporter_user_id == CURRENT_USER_ID).first()
    rid = r.id
    if r.status == "open":
        session.delete(r)
        session.commit()
        session.close()
        return DeleteResult(id=rid, deleted=True, message="Report withdrawn")
    status = r.status
    session.close()
    return DeleteResult(id=rid, deleted=False, message=f"Report is {status} and can no longer be withdrawn")


# ---------------------------------------------------------------------------
# Community posts
# ---------------------------------------------------------------------------

@app.get("/api/channels/{channel_id}/posts", summary="List community posts", description="Community posts of a channel, newest first.", tags=["posts"], operation_id="list_channel_posts", response_model=List[PostOut])
async def list_channel_posts(channel_id: int = Path(..., description="Channel ID", examples=[1])):
    session = SessionLocal()
    ret = [PostOut.model_validate(p) for p in session.query(ChannelPost).filter(ChannelPost.channel_id == channel_id).order_by(ChannelPost.created_at.desc(), ChannelPost.id.desc()).all()]
    session.close()
    return ret


@app.post("/api/posts", summary="Publish a community post", description="Publish a community post on the current user's channel, optionally linking a video.", tags=["posts"], operation_id="create_channel_post", response_model=PostOut)
async def create_channel_post(body: PostCreate = Body(...)):
    session = SessionLocal()
    ch = my_channel(session)
    p = ChannelPost(channel_id=ch.id, body=body.body, linked_video_id=body.linked_video_id, like_count=0, created_at=utcnow())
    session.add(p)
    session.commit()
    session.refresh(p)
    ret = PostOut.model_validate(p)
    session.close()
    return ret


@app.delete("/api/posts/{post_id}", summary="Delete a community post", description="Delete a community post from your channel.", tags=["posts"], operation_id="delete_channel_post", response_model=DeleteResult)
async def delete_channel_post(post_id: int = Path(..., description="Post ID", examples=[2])):
    session = SessionLocal()
    ch = my_channel(session)
    p = session.query(ChannelPost).filter(ChannelPost.id == post_id, ChannelPost.channel_id == ch.id).first()
    pid = p.id
    session.delete(p)
    session.commit()
    session.close()
    return DeleteResult(id=pid, deleted=True, message="Post deleted")


if __name__ == "__main__":
    import uvicorn
    uvicorn.run(app, host=os.getenv("HOST", "127.0.0.1"), port=int(os.getenv("PORT", "8000")))
