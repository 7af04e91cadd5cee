import os
from typing import List, Optional, Literal
from datetime import datetime, timezone

from fastapi import FastAPI, Query, Path, Body
from pydantic import BaseModel, Field, ConfigDict
from sqlalchemy import (
    create_engine, Column, Integer, String, DateTime, ForeignKey, Text, UniqueConstraint, CheckConstraint, func, or_
)
from sqlalchemy.orm import declarative_base, sessionmaker

engine = create_engine(os.getenv("DATABASE_PATH", "sqlite:///codeforge_devtools.db"), connect_args={"check_same_thread": False})
SessionLocal = sessionmaker(bind=engine, expire_on_commit=False)
Base = declarative_base()

app = FastAPI(
    title="CodeForge API",
    description="Source hosting and collaboration API: organisations, repositories, branches, commits, issues, labels, milestones, pull requests, reviews, releases and webhooks.",
    version="1.0.0",
)

CURRENT_USER_ID = 1


# ---------------------------------------------------------------------------
# ORM models (mirror schema.sql)
# ---------------------------------------------------------------------------

class User(Base):
    __tablename__ = "users"
    id = Column(Integer, primary_key=True)
    username = Column(String, unique=True, nullable=False)
    email = Column(String, unique=True, nullable=False)
    full_name = Column(String, nullable=False)
    bio = Column(Text)
    location = Column(String)
    created_at = Column(DateTime, nullable=False, default=func.now())


class Organization(Base):
    __tablename__ = "organizations"
    id = Column(Integer, primary_key=True)
    login = Column(String, unique=True, nullable=False)
    name = Column(String, nullable=False)
    description = Column(Text)
    billing_email = Column(String, nullable=False)
    plan = Column(String, nullable=False, default="free")
    created_at = Column(DateTime, nullable=False, default=func.now())
    __table_args__ = (CheckConstraint("plan IN ('free', 'team', 'enterprise')"),)


class OrgMembership(Base):
    __tablename__ = "org_memberships"
    id = Column(Integer, primary_key=True)
    org_id = Column(Integer, ForeignKey("organizations.id", ondelete="CASCADE"), nullable=False)
    user_id = Column(Integer, ForeignKey("users.id", ondelete="CASCADE"), nullable=False)
    role = Column(String, nullable=False, default="member")
    joined_at = Column(DateTime, nullable=False, default=func.now())
    __table_args__ = (UniqueConstraint("org_id", "user_id"), CheckConstraint("role IN ('owner', 'admin', 'member')"))


class Repository(Base):
    __tablename__ = "repositories"
    id = Column(Integer, primary_key=True)
    org_id = Column(Integer, ForeignKey("organizations.id", ondelete="CASCADE"), nullable=False)
    name = Column(String, nullable=False)
    description = Column(Text)
    visibility = Column(String, nullable=False, default="private")
    default_branch = Column(String, nullable=False, default="main")
    primary_language = Column(String)
    is_archived = Column(Integer, nullable=False, default=0)
    stars_count = Column(Integer, nullable=False, default=0)
    created_at = Column(DateTime, nullable=False, default=func.now())
    updated_at = Column(DateTime, nullable=False, default=func.now())
    __table_args__ = (UniqueConstraint("org_id", "name"), CheckConstraint("visibility IN ('public', 'private', 'internal')"))


class Branch(Base):
    __tablename__ = "branches"
    id = Column(Integer, primary_key=True)
    repository_id = Column(Integer, ForeignKey("repositories.id", ondelete="CASCADE"), nullable=False)
    name = Column(String, nullable=False)
    head_commit_sha = Column(String)
    is_protected = Column(Integer, nullable=False, default=0)
    created_at = Column(DateTime, nullable=False, default=func.now())
    __table_args__ = (UniqueConstraint("repository_id", "name"),)


class Commit(Base):
    __tablename__ = "commits"
    id = Column(Integer, primary_key=True)
    repository_id = Column(Integer, ForeignKey("repositories.id", ondelete="CASCADE"), nullable=False)
    branch_id = Column(Integer, ForeignKey("branches.id", ondelete="SET NULL"))
    sha = Column(String, unique=True, nullable=False)
    message = Column(Text, nullable=False)
    author_id = Column(Integer, ForeignKey("users.id", ondelete="RESTRICT"), nullable=False)
    additions = Column(Integer, nullable=False, default=0)
    deletions = Column(Integer, nullable=False, default=0)
    committed_at = Column(DateTime, nullable=False, default=func.now())


class Label(Base):
    __tablename__ = "labels"
    id = Column(Integer, primary_key=True)
    repository_id = Column(Integer, ForeignKey("repositories.id", ondelete="CASCADE"), nullable=False)
    name = Column(String, nullable=False)
    color = Column(String, nullable=False)
    description = Column(Text)
    __table_args__ = (UniqueConstraint("repository_id", "name"),)


class Milestone(Base):
    __tablename__ = "milestones"
    id = Column(Integer, primary_key=True)
    repository_id = Column(Integer, ForeignKey("repositories.id", ondelete="CASCADE"), nullable=False)
    title = Column(String, nullable=False)
    description = Column(Text)
    state = Column(String, nullable=False, default="open")
    due_on = Column(DateTime)
    closed_at = Column(DateTime)
    created_at = Column(DateTime, nullable=False, default=func.now())
    __table_args__ = (UniqueConstraint("repository_id", "title"),)


class Issue(Base):
    __tablename__ = "issues"
    id = Column(Integer, primary_key=True)
    repository_id = Column(Integer, ForeignKey("repositories.id", ondelete="CASCADE"), nullable=False)
    number = Column(Integer, nullable=False)
    title = Column(String, nullable=False)
    body = Column(Text)
    state = Column(String, nullable=False, default="open")
    state_reason = Column(String)
    author_id = Column(Integer, ForeignKey("users.id", ondelete="RESTRICT"), nullable=False)
    milestone_id = Column(Integer, ForeignKey("milestones.id", ondelete="SET NULL"))
    created_at = Column(DateTime, nullable=False, default=func.now())
    updated_at = Column(DateTime, nullable=False, default=func.now())
    closed_at = Column(DateTime)
    __table_args__ = (UniqueConstraint("repository_id", "number"),)


class IssueLabel(Base):
    __tablename__ = "issue_labels"
    id = Column(Integer, primary_key=True)
    issue_id = Column(Integer, ForeignKey("issues.id", ondelete="CASCADE"), nullable=False)
    label_id = Column(Integer, ForeignKey("labels.id", ondelete="CASCADE"), nullable=False)
    __table_args__ = (UniqueConstraint("issue_id", "label_id"),)


class IssueAssignee(Base):
    __tablename__ = "issue_assignees"
    id = Column(Integer, primary_key=True)
    issue_id = Column(Integer, ForeignKey("issues.id", ondelete="CASCADE"), nullable=False)
    user_id = Column(Integer, ForeignKey("users.id", ondelete="CASCADE"), nullable=False)
    __table_args__ = (UniqueConstraint("issue_id", "user_id"),)


class PullRequest(Base):
    __tablename__ = "pull_requests"
    id = Column(Integer, primary_key=True)
    repository_id = Column(Integer, ForeignKey("repositories.id", ondelete="CASCADE"), nullable=False)
    number = Column(Integer, nullable=False)
    title = Column(String, nullable=False)
    body = Column(Text)
    author_id = Column(Integer, ForeignKey("users.id", ondelete="RESTRICT"), nullable=False)
    head_branch = Column(String, nullable=False)
    base_branch = Column(String, nullable=False)
    state = Column(String, nullable=False, default="open")
    is_draft = Column(Integer, nullable=False, default=0)
    merge_method = Column(String)
    merge_commit_sha = Column(String)
    merged_by_id = Column(Integer, ForeignKey("users.id", ondelete="SET NULL"))
    created_at = Column(DateTime, nullable=False, default=func.now())
    updated_at = Column(DateTime, nullable=False, default=func.now())
    merged_at = Column(DateTime)
    closed_at = Column(DateTime)
    __table_args__ = (UniqueConstraint("repository_id", "number"), CheckConstraint("head_branch <> base_branch"))


class PullRequestReview(Base):
    __tablename__ = "pull_request_reviews"
    id = Column(Integer, primary_key=True)
    pull_request_id = Column(Integer, ForeignKey("pull_requests.id", ondelete="CASCADE"), nullable=False)
    reviewer_id = Column(Integer, ForeignKey("users.id", ondelete="CASCADE"), nullable=False)
    state = Column(String, nullable=False)
    body = Column(Text)
    submitted_at = Column(DateTime, nullable=False, default=func.now())


class Comment(Base):
    __tablename__ = "comments"
    id = Column(Integer, primary_key=True)
    issue_id = Column(Integer, ForeignKey("issues.id", ondelete="CASCADE"))
    pull_request_id = Column(Integer, ForeignKey("pull_requests.id", ondelete="CASCADE"))
    author_id = Column(Integer, ForeignKey("users.id", ondelete="RESTRICT"), nullable=False)
    body = Column(Text, nullable=False)
    created_at = Column(DateTime, nullable=False, default=func.now())
    updated_at = Column(DateTime, nullable=False, default=func.now())


class Release(Base):
    __tablename__ = "releases"
    id = Column(Integer, primary_key=True)
    repository_id = Column(Integer, ForeignKey("repositories.id", ondelete="CASCADE"), nullable=False)
    tag_name = Column(String, nullable=False)
    name = Column(String, nullable=False)
    body = Column(Text)
    target_branch = Column(String, nullable=False, default="main")
    is_draft = Column(Integer, nullable=False, default=0)
    is_prerelease = Column(Integer, nullable=False, default=0)
    author_id = Column(Integer, ForeignKey("users.id", ondelete="RESTRICT"), nullable=False)
    created_at = Column(DateTime, nullable=False, default=func.now())
    published_at = Column(DateTime)
    __table_args__ = (UniqueConstraint("repository_id", "tag_name"),)


class Webhook(Base):
    __tablename__ = "webhooks"
    id = Column(Integer, primary_key=True)
    repository_id = Column(Integer, ForeignKey("repositories.id", ondelete="CASCADE"), nullable=False)
    url = Column(String, nullable=False)
    events = Column(String, nullable=False, default="push")
    content_type = Column(String, nullable=False, default="json")
    is_active = Column(Integer, nullable=False, default=1)
    last_delivery_status = Column(Integer)
    created_at = Column(DateTime, nullable=False, default=func.now())
    __table_args__ = (UniqueConstraint("repository_id", "url"),)


# ---------------------------------------------------------------------------
# Pydantic schemas
# ---------------------------------------------------------------------------

WebhookEvent = Literal[
    "push", "pull_request", "pull_request_review", "issues", "issue_comment", "release", "create", "delete"
]


class DeleteResponse(BaseModel):
    id: int = Field(..., description="ID of the deleted record", examples=[3])
    deleted: bool = Field(..., description="True when the record was removed", examples=[True])


class UserResponse(BaseModel):
    id: int = Field(..., description="User ID", examples=[2])
    username: str = Field(..., description="Login handle", examples=["priya-nair"])
    email: str = Field(..., description="Primary email", examples=["priya.nair@nimbuslabs.io"])
    full_name: str = Field(..., description="Display name", examples=["Priya Nair"])
    bio: Optional[str] = Field(None, description="Profile bio")
    location: Optional[str] = Field(None, description="Location", examples=["Bengaluru, India"])
    created_at: Optional[datetime] = Field(None, description="Account creation time")
    model_config = ConfigDict(from_attributes=True)


class UserListResponse(BaseModel):
    users: List[UserResponse] = Field(..., description="Matching users")


class OrganizationResponse(BaseModel):
    id: int = Field(..., description="Organisation ID", examples=[1])
    login: str = Field(..., description="URL handle of the organisation", examples=["nimbus-labs"])
    name: str = Field(..., description="Display name", examples=["Nimbus Labs"])
    description: Optional[str] = Field(None, description="Description")
    billing_email: str = Field(..., description="Billing contact", examples=["billing@nimbuslabs.io"])
    plan: str = Field(..., description="free, team or enterprise", examples=["team"])
    created_at: Optional[datetime] = Field(None, description="Creation time")
    model_config = ConfigDict(from_attributes=True)


class OrganizationListResponse(BaseModel):
    organizations: List[OrganizationResponse] = Field(..., description="Matching organisations")


class MemberResponse(BaseModel):
    id: int = Field(..., description="Membership ID", examples=[14])
    org_id: int = Field(..., description="Organisation ID", examples=[1])
    user_id: int = Field(..., description="User ID", examples=[9])
    username: str = Field(..., description="Member's username", examples=["sam-ortiz"])
    role: str = Field(..., description="owner, admin or member", examples=["member"])
    joined_at: Optional[datetime] = Field(None, description="When the user joined")


class MemberListResponse(BaseModel):
    members: List[MemberResponse] = Field(..., description="Organisation members")


class MemberAddRequest(BaseModel):
    user_id: int = Field(..., description="User to add", examples=[9])
    role: Literal["owner", "admin", "member"] = Field("member", description="Role in the organisation", examples=["member"])


class RepositoryResponse(BaseModel):
    id: int = Field(..., description="Repository ID", examples=[1])
    org_id: int = Field(..., description="Owning organisation ID", examples=[1])
    full_name: str = Field(..., description="owner/name", examples=["nimbus-labs/lumen-api"])
    name: str = Field(..., description="Repository name", examples=["lumen-api"])
    description: Optional[str] = Field(None, description="Description")
    visibility: str = Field(..., description="public, private or internal", examples=["private"])
    default_branch: str = Field(..., description="Default branch name", examples=["main"])
    primary_language: Optional[str] = Field(None, description="Main language", examples=["Python"])
    is_archived: bool = Field(..., description="Archived repositories are read-only", examples=[False])
    stars_count: int = Field(..., description="Stargazers", examples=[48])
    created_at: Optional[datetime] = Field(None, description="Creation time")
    updated_at: Optional[datetime] = Field(None, description="Last update time")


class RepositoryListResponse(BaseModel):
    repositories: List[RepositoryResponse] = Field(..., description="Matching repositories")


class RepositoryCreateRequest(BaseModel):
    org_id: int = Field(..., description="Organisation that will own the repository", examples=[1])
    name: str = Field(..., pattern=r"^[A-Za-z0-9._-]+$", description="Repository name (letters, digits, . _ -)", examples=["lumen-mobile"])
    description: Optional[str] = Field(None, description="Description", examples=["React Native app for Lumen"])
    visibility: Literal["public", "private", "internal"] = Field("private", description="Visibility")
    default_branch: str = Field("main", description="Name of the default branch", examples=["main"])
    primary_language: Optional[str] = Field(None, description="Main language", examples=["TypeScript"])
    auto_init: bool = Field(True, description="Create the default branch with an initial commit")


class RepositoryUpdateRequest(BaseModel):
    name: Optional[str] = Field(None, pattern=r"^[A-Za-z0-9._-]+$", description="New name")
    description: Optional[str] = Field(None, description="New description")
    visibility: Optional[Literal["public", "private", "internal"]] = Field(None, description="New visibility")
    default_branch: Optional[str] = Field(None, description="New default branch (must exist)")
    is_archived: Optional[bool] = Field(None, description="Archive (true) or unarchive (false)", examples=[True])


class BranchResponse(BaseModel):
    id: int = Field(..., description="Branch ID", examples=[2])
    repository_id: int = Field(..., description="Repository ID", examples=[1])
    name: str = Field(..., description="Branch name", examples=["feature/cursor-pagination"])
    head_commit_sha: Optional[str] = Field(None, description="SHA of the branch tip")
    is_protected: bool = Field(..., description="Protected branches need reviews and cannot be deleted casually", examples=[False])
    created_at: Optional[datetime] = Field(None, description="Creation time")
    model_config = ConfigDict(from_attributes=True)


class BranchListResponse(BaseModel):
    branches: List[BranchResponse] = Field(..., description="Matching branches")


class BranchCreateRequest(BaseModel):
    name: str = Field(..., description="New branch name", examples=["hotfix/token-refresh"])
    from_branch: Optional[str] = Field(None, description="Existing branch to branch off; defaults to the repository's default branch", examples=["main"])


class BranchUpdateRequest(BaseModel):
    is_protected: bool = Field(..., description="Enable or disable branch protection", examples=[True])


class CommitResponse(BaseModel):
    id: int = Field(..., description="Commit row ID", examples=[19])
    repository_id: int = Field(..., description="Repository ID", examples=[4])
    branch_id: Optional[int] = Field(None, description="Branch the commit was made on", examples=[8])
    sha: str = Field(..., description="40-character commit SHA")
    message: str = Field(..., description="Commit message", examples=["Release v1.7.1"])
    author_id: int = Field(..., description="Author user ID (resolve with get_user)", examples=[6])
    additions: int = Field(..., description="Lines added", examples=[3])
    deletions: int = Field(..., description="Lines deleted", examples=[3])
    committed_at: Optional[datetime] = Field(None, description="Commit time")
    model_config = ConfigDict(from_attributes=True)


class CommitListResponse(BaseModel):
    commits: List[CommitResponse] = Field(..., description="Commits, newest first")


class LabelResponse(BaseModel):
    id: int = Field(..., description="Label ID", examples=[1])
    repository_id: int = Field(..., description="Repository ID", examples=[1])
    name: str = Field(..., description="Label name", examples=["bug"])
    color: str = Field(..., description="6-digit hex colour without #", examples=["d73a4a"])
    description: Optional[str] = Field(None, description="Description")
    model_config = ConfigDict(from_attributes=True)


class LabelListResponse(BaseModel):
    labels: List[LabelResponse] = Field(..., description="Labels of the repository")


class LabelCreateRequest(BaseModel):
    name: str = Field(..., min_length=1, description="Label name, unique within the repository", examples=["needs-triage"])
    color: str = Field(..., pattern=r"^#?[0-9a-fA-F]{6}$", description="6-digit hex colour, with or without #", examples=["fbca04"])
    description: Optional[str] = Field(None, description="Description", examples=["Awaiting initial triage"])


class MilestoneResponse(BaseModel):
    id: int = Field(..., description="Milestone ID", examples=[2])
    repository_id: int = Field(..., description="Repository ID", examples=[1])
    title: str = Field(..., description="Title", examples=["v2.4"])
    description: Optional[str] = Field(None, description="Description")
    state: str = Field(..., description="open or closed", examples=["open"])
    due_on: Optional[datetime] = Field(None, description="Due date")
    closed_at: Optional[datetime] = Field(None, description="When it was closed")
    open_issues: int = Field(0, description="Open issues in the milestone", examples=[2])
    closed_issues: int = Field(0, description="Closed issues in the milestone", examples=[0])


class MilestoneListResponse(BaseModel):
    milestones: List[MilestoneResponse] = Field(..., description="Milestones of the repository")


class MilestoneCreateRequest(BaseModel):
    title: str = Field(..., description="Title, unique within the repository", examples=["v2.6"])
    description: Optional[str] = Field(None, description="Description")
    due_on: Optional[datetime] = Field(None, description="Due date (ISO 8601)", examples=["2026-09-30T00:00:00"])


class MilestoneUpdateRequest(BaseModel):
    title: Optional[str] = Field(None, description="New title")
    description: Optional[str] = Field(None, description="New description")
    due_on: Optional[datetime] = Field(None, description="New due date")
    state: Optional[Literal["open", "closed"]] = Field(None, description="open or closed", examples=["closed"])


class IssueResponse(BaseModel):
    id: int = Field(..., description="Issue ID (use this in issue endpoints)", examples=[3])
    repository_id: int = Field(..., description="Repository ID", examples=[1])
    number: int = Field(..., description="Issue number shown as #N in the repository", examples=[14])
    title: str = Field(..., description="Title", examples=["Support cursor pagination on list endpoints"])
    body: Optional[str] = Field(None, description="Markdown body")
    state: str = Field(..., description="open or closed", examples=["open"])
    state_reason: Optional[str] = Field(None, description="completed, not_planned or reopened")
    author_id: int = Field(..., description="Author user ID", examples=[2])
    milestone_id: Optional[int] = Field(None, description="Milestone ID", examples=[2])
    labels: List[str] = Field(default_factory=list, description="Label names", examples=[["enhancement"]])
    assignees: List[str] = Field(default_factory=list, description="Assignee usernames", examples=[["marco-rossi"]])
    created_at: Optional[datetime] = Field(None, description="Creation time")
    updated_at: Optional[datetime] = Field(None, description="Last update time")
    closed_at: Optional[datetime] = Field(None, description="Close time")


class IssueListResponse(BaseModel):
    issues: List[IssueResponse] = Field(..., description="Matching issues")


class IssueCreateRequest(BaseModel):
    title: str = Field(..., min_length=1, description="Title", examples=["Document local dev setup on Apple Silicon"])
    body: Optional[str] = Field(None, description="Markdown body")
    milestone_id: Optional[int] = Field(None, description="Milestone ID of the same repository", examples=[4])


class IssueUpdateRequest(BaseModel):
    title: Optional[str] = Field(None, description="New title")
    body: Optional[str] = Field(None, description="New body")
    state: Optional[Literal["open", "closed"]] = Field(None, description="open or closed", examples=["closed"])
    state_reason: Optional[Literal["completed", "not_planned", "reopened"]] = Field(None, description="Reason when closing (default completed)", examples=["completed"])
    milestone_id: Optional[int] = Field(None, description="Milestone ID; send null to remove the milestone", examples=[2])


class IssueLabelsAddRequest(BaseModel):
    label_ids: List[int] = Field(..., min_length=1, description="Label IDs of the same repository", examples=[[9, 10]])


class IssueAssigneesAddRequest(BaseModel):
    user_ids: List[int] = Field(..., min_length=1, description="User IDs to assign", examples=[[9]])


class CommentResponse(BaseModel):
    id: int = Field(..., description="Comment ID", examples=[14])
    issue_id: Optional[int] = Field(None, description="Issue ID if this is an issue comment")
    pull_request_id: Optional[int] = Field(None, description="Pull request ID if this is a PR comment")
    author_id: int = Field(..., description="Author user ID", examples=[1])
    body: str = Field(..., description="Markdown body", examples=["Fixed in #17"])
    created_at: Optional[datetime] = Field(None, description="Creation time")
    model_config = ConfigDict(from_attributes=True)


class CommentListResponse(BaseModel):
    comments: List[CommentResponse] = Field(..., description="Comments, oldest first")


class CommentCreateRequest(BaseModel):
    body: str = Field(..., min_length=1, description="Markdown body", examples=["Fixed in #17"])


class ReviewResponse(BaseModel):
    id: int = Field(..., description="Review ID", examples=[10])
    pull_request_id: int = Field(..., description="Pull request ID", examples=[1])
    reviewer_id: int = Field(..., description="Reviewer user ID", examples=[1])
    state: str = Field(..., description="approved, changes_requested or commented", examples=["approved"])
    body: Optional[str] = Field(None, description="Review summary")
    submitted_at: Optional[datetime] = Field(None, description="Submission time")
    model_config = ConfigDict(from_attributes=True)


class ReviewCreateRequest(BaseModel):
    state: Literal["approved", "changes_requested", "commented"] = Field(..., description="Review verdict", examples=["approved"])
    body: Optional[str] = Field(None, description="Review summary", examples=["LGTM, nice work"])


class PullRequestResponse(BaseModel):
    id: int = Field(..., description="Pull request ID (use this in PR endpoints)", examples=[1])
    repository_id: int = Field(..., description="Repository ID", examples=[1])
    number: int = Field(..., description="Number shown as #N in the repository", examples=[17])
    title: str = Field(..., description="Title", examples=["Add cursor-based pagination to list endpoints"])
    body: Optional[str] = Field(None, description="Description")
    author_id: int = Field(..., description="Author user ID", examples=[3])
    head_branch: str = Field(..., description="Branch with the changes", examples=["feature/cursor-pagination"])
    base_branch: str = Field(..., description="Branch to merge into", examples=["main"])
    state: str = Field(..., description="open, closed or merged", examples=["open"])
    is_draft: bool = Field(..., description="Draft pull requests cannot be merged", examples=[False])
    merge_method: Optional[str] = Field(None, description="merge, squash or rebase once merged")
    merge_commit_sha: Optional[str] = Field(None, description="SHA of the merge commit")
    merged_by_id: Optional[int] = Field(None, description="User who merged")
    created_at: Optional[datetime] = Field(None, description="Creation time")
    updated_at: Optional[datetime] = Field(None, description="Last update time")
    merged_at: Optional[datetime] = Field(None, description="Merge time")
    closed_at: Optional[datetime] = Field(None, description="Close time")
    model_config = ConfigDict(from_attributes=True)


class PullRequestDetailResponse(PullRequestResponse):
    reviews: List[ReviewResponse] = Field(default_factory=list, description="Submitted reviews")


class PullRequestListResponse(BaseModel):
    pull_requests: List[PullRequestResponse] = Field(..., description="Matching pull requests")


class PullRequestCreateRequest(BaseModel):
    title: str = Field(..., min_length=1, description="Title", examples=["Fix token refresh race during upload"])
    body: Optional[str] = Field(None, description="Description")
    head_branch: str = Field(..., description="Existing branch with the changes", examples=["hotfix/token-refresh"])
    base_branch: Optional[str] = Field(None, description="Branch to merge into; defaults to the repository's default branch", examples=["main"])
    is_draft: bool = Field(False, description="Open as a draft", examples=[True])


class PullRequestUpdateRequest(BaseModel):
    title: Optional[str] = Field(None, description="New title")
    body: Optional[str] = Field(None, description="New description")
    state: Optional[Literal["open", "closed"]] = Field(None, description="Close or reopen (use merge_pull_request to merge)")
    is_draft: Optional[bool] = Field(None, description="false marks the draft ready for review")
    base_branch: Optional[str] = Field(None, description="New base branch")


class MergeRequest(BaseModel):
    merge_method: Literal["merge", "squash", "rebase"] = Field("merge", description="merge, squash or rebase", examples=["squash"])
    commit_title: Optional[str] = Field(None, description="Title of the merge commit; generated when omitted")


class ReleaseResponse(BaseModel):
    id: int = Field(..., description="Release ID", examples=[8])
    repository_id: int = Field(..., description="Repository ID", examples=[1])
    tag_name: str = Field(..., description="Git tag", examples=["v2.4.0"])
    name: str = Field(..., description="Release title", examples=["Lumen API 2.4.0"])
    body: Optional[str] = Field(None, description="Release notes")
    target_branch: str = Field(..., description="Branch the tag points at", examples=["main"])
    is_draft: bool = Field(..., description="Draft releases are unpublished", examples=[False])
    is_prerelease: bool = Field(..., description="Marked as pre-release", examples=[False])
    author_id: int = Field(..., description="Author user ID", examples=[1])
    created_at: Optional[datetime] = Field(None, description="Creation time")
    published_at: Optional[datetime] = Field(None, description="Publication time, null for drafts")
    model_config = ConfigDict(from_attributes=True)


class ReleaseListResponse(BaseModel):
    releases: List[ReleaseResponse] = Field(..., description="Releases, newest first")


class ReleaseCreateRequest(BaseModel):
    tag_name: str = Field(..., description="Tag to create, unique in the repository", examples=["v2.4.0"])
    name: str = Field(..., description="Release title", examples=["Lumen API 2.4.0"])
    body: Optional[str] = Field(None, description="Release notes")
    target_branch: Optional[str] = Field(None, description="Branch to tag; defaults to the default branch", examples=["main"])
    is_draft: bool = Field(False, description="Save as draft instead of publishing")
    is_prerelease: bool = Field(False, description="Mark as pre-release")


class WebhookResponse(BaseModel):
    id: int = Field(..., description="Webhook ID", examples=[6])
    repository_id: int = Field(..., description="Repository ID", examples=[2])
    url: str = Field(..., description="Payload URL", examples=["https://hooks.example.com/ci"])
    events: List[str] = Field(..., description="Subscribed events", examples=[["push", "pull_request"]])
    content_type: str = Field(..., description="json or form", examples=["json"])
    is_active: bool = Field(..., description="Deliveries enabled", examples=[True])
    last_delivery_status: Optional[int] = Field(None, description="HTTP status of the last delivery")
    created_at: Optional[datetime] = Field(None, description="Creation time")


class WebhookListResponse(BaseModel):
    webhooks: List[WebhookResponse] = Field(..., description="Webhooks of the repository")


class WebhookCreateRequest(BaseModel):
    url: str = Field(..., pattern=r"^https?://", description="Payload URL (http or https)", examples=["https://hooks.example.com/ci"])
    events: List[WebhookEvent] = Field(["push"], min_length=1, description="Events that trigger a delivery", examples=[["push", "pull_request"]])
    content_type: Literal["json", "form"] = Field("json", description="Payload encoding")
    is_active: bool = Field(True, description="Enable deliveries")


class WebhookUpdateRequest(BaseModel):
    url: Optional[str] = Field(None, pattern=r"^https?://", description="New payload URL")
    events: Optional[List[WebhookEvent]] = Field(None, min_length=1, description="Replace the subscribed events")
    content_type: Optional[Literal["json", "form"]] = Field(None, description="Payload encoding")
    is_active: Optional[bool] = Field(None, description="Enable or disable deliveries", examples=[False])


# ---------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------

def utcnow() -> datetime:
    return datetime.now(timezone.utc).replace(tzinfo=None)


def make_sha(*parts) -> str:
    seed = "|".join(str(p) for p in parts)
    acc = 0xcbf29ce484222325
    out = ""
    for round_no in range(3):
        for ch in seed + str(round_no):
            acc = ((acc ^ ord(ch)) * 0x100000001b3) % (1 << 64)
        out += f"{acc:016x}"
    return out[:40]


def repo_out(session, repo: Repository) -> RepositoryResponse:
    org = session.query(Organization).filter(Organization.id == repo.org_id).first()
    return RepositoryResponse(
        id=repo.id, org_id=repo.org_id, full_name=f"{org.login}/{repo.name}", name=repo.name,
        description=repo.description, visibility=repo.visibility, default_branch=repo.default_branch,
        primary_language=repo.primary_language, is_archived=bool(repo.is_archived), stars_count=repo.stars_count,
        created_at=repo.created_at, updated_at=repo.updated_at,
    )


def issue_out(session, issue: Issue) -> IssueResponse:
    labels = (session.query(Label.name).join(IssueLabel, IssueLabel.label_id == Label.id)
              .filter(IssueLabel.issue_id == issue.id).order_by(Label.name).all())
    assignees = (session.query(User.username).join(IssueAssignee, IssueAssignee.user_id == User.id)
                 .filter(IssueAssignee.issue_id == issue.id).order_by(User.username).all())
    return IssueResponse(
        id=issue.id, repository_id=issue.repository_id, number=issue.number, title=issue.title, body=issue.body,
        state=issue.state, state_reason=issue.state_reason, author_id=issue.author_id, milestone_id=issue.milestone_id,
        labels=[l[0] for l in labels], assignees=[a[0] for a in assignees],
        created_at=issue.created_at, updated_at=issue.updated_at, closed_at=issue.closed_at,
    )


def milestone_out(session, ms: Milestone) -> MilestoneResponse:
    open_count = session.query(Issue).filter(Issue.milestone_id == ms.id, Issue.state == "open").count()
    closed_count = session.query(Issue).filter(Issue.milestone_id == ms.id, Issue.state == "closed").count()
    return MilestoneResponse(
        id=ms.id, repository_id=ms.repository_id, title=ms.title, description=ms.description, state=ms.state,
        due_on=ms.due_on, closed_at=ms.closed_at, open_issues=open_count, closed_issues=closed_count,
    )


def webhook_out(hook: Webhook) -> WebhookResponse:
    return WebhookResponse(
        id=hook.id, repository_id=hook.repository_id, url=hook.url,
        events=[e for e in (hook.events or "").split(",") if e], content_type=hook.content_type,
        is_active=bool(hook.is_active), last_delivery_status=hook.last_delivery_status, created_at=hook.created_at,
    )


def next_number(session, repository_id: int) -> int:
    max_issue = session.query(func.max(Issue.number)).filter(Issue.repository_id == repository_id).scalar() or 0
    max_pr = session.query(func.max(PullRequest.number)).filter(PullRequest.repository_id == repository_id).scalar() or 0
    return max(max_issue, max_pr) + 1


def pr_detail(session, pr: PullRequest) -> PullRequestDetailResponse:
    reviews = session.query(PullRequestReview).filter(PullRequestReview.pull_request_id == pr.id).order_by(PullRequestReview.id).all()
    data = PullRequestResponse.model_validate(pr).model_dump()
    return PullRequestDetailResponse(**data, reviews=[ReviewResponse.model_validate(r) for r in reviews])


# ---------------------------------------------------------------------------
# Users
# ---------------------------------------------------------------------------

@app.get(
    "/api/users",
    summary="Search users",
    description="Find users by username, full name or email (case-insensitive substring).",
    tags=["users"],
    operation_id="list_users",
    response_model=UserListResponse,
)
async def list_users(search: Optional[str] = Query(None, description="Substring of username, full name or email")):
    session = SessionLocal()
    query = session.query(User)
    if search:
        like = f"%{search}%"
        query = query.filter(or_(User.username.ilike(like), User.full_name.ilike(like), User.email.ilike(like)))
    users = query.order_by(User.id).all()
    session.close()
    return UserListResponse(users=[UserResponse.model_validate(u) for u in users])


@app.get(
    "/api/users/me",
    summary="Get the authenticated user",
    description="Return the profile of the user the API acts as (user 1).",
    tags=["users"],
    operation_id="get_current_user",
    response_model=UserResponse,
)
async def get_current_user():
    session = SessionLocal()
    user = session.query(User).filter(User.id == CURRENT_USER_ID).first()
    session.close()
    return UserResponse.model_validate(user)


@app.get(
    "/api/users/{user_id}",
    summary="Get a user",
    description="Return one user's public profile by ID.",
    tags=["users"],
    operation_id="get_user",
    response_model=UserResponse,
)
async def get_user(user_id: int = Path(..., description="User ID")):
    session = SessionLocal()
    user = session.query(User).filter(User.id == user_id).first()
    session.close()
    return UserResponse.model_validate(user)


# ---------------------------------------------------------------------------
# Organisations
# ---------------------------------------------------------------------------

@app.get(
    "/api/organizations",
    summary="List organisations",
    description="List organisations, optionally filtered by login or display name (substring).",
    tags=["organizations"],
    operation_id="list_organizations",
    response_model=OrganizationListResponse,
)
async def list_organizations(search: Optional[str] = Query(None, description="Substring of the login or display name")):
    session = SessionLocal()
    query = session.query(Organization)
    if search:
        like = f"%{search}%"
        query = query.filter(or_(Organization.login.ilike(like), Organization.name.ilike(like)))
    orgs = query.order_by(Organization.id).all()
    session.close()
    return OrganizationListResponse(organizations=[OrganizationResponse.model_validate(o) for o in orgs])


@app.get(
    "/api/organizations/{org_id}/members",
    summary="List organisation members",
    description="List the members of an organisation with their roles, optionally filtered by role.",
    tags=["organizations"],
    operation_id="list_organization_members",
    response_model=MemberListResponse,
)
async def list_organization_members(
    org_id: int = Path(..., description="Organisation ID"),
    role: Optional[str] = Query(None, description="owner, admin or member"),
):
    session = SessionLocal()
    query = session.query(OrgMembership, User).join(User, User.id == OrgMembership.user_id).filter(OrgMembership.org_id == org_id)
    if role:
        query = query.filter(OrgMembership.role == role)
    rows = query.order_by(OrgMembership.id).all()
    session.close()
    return MemberListResponse(members=[
        MemberResponse(id=m.id, org_id=m.org_id, user_id=m.user_id, username=u.username, role=m.role, joined_at=m.joined_at)
        for m, u in rows
    ])


@app.post(
    "/api/organizations/{org_id}/members",
    summary="Add a member to an organisation",
    description="Add an existing user to an organisation with the given role.",
    tags=["organizations"],
    operation_id="add_organization_member",
    response_model=MemberResponse,
)
async def add_organization_member(
    org_id: int = Path(..., description="Organisation ID"),
    body: MemberAddRequest = Body(...),
):
    session = SessionLocal()
    org = session.query(Organization).filter(Organization.id == org_id).first()
    user = session.query(User).filter(User.id == body.user_id).first()
    membership = OrgMembership(org_id=org.id, user_id=user.id, role=body.role)
    session.add(membership)
    session.commit()
    session.refresh(membership)
    session.close()
    return MemberResponse(id=membership.id, org_id=membership.org_id, user_id=membership.user_id,
                          username=user.username, role=membership.role, joined_at=membership.joined_at)


# ---------------------------------------------------------------------------
# Repositories
# ---------------------------------------------------------------------------

@app.get(
    "/api/repositories",
    summary="List repositories",
    description="List repositories, filtered by organisation, name (substring), visibility or archive state.",
    tags=["repositories"],
    operation_id="list_repositories",
    response_model=RepositoryListResponse,
)
async def list_repositories(
    org_id: Optional[int] = Query(None, description="Only repositories of this organisation ID"),
    name: Optional[str] = Query(None, description="Case-insensitive substring of the repository name"),
    visibility: Optional[str] = Query(None, description="public, private or internal"),
    is_archived: Optional[bool] = Query(None, description="Filter by archive state"),
):
    session = SessionLocal()
    query = session.query(Repository)
    if org_id is not None:
        query = query.filter(Repository.org_id == org_id)
    if name:
        query = query.filter(Repository.name.ilike(f"%{name}%"))
    if visibility:
        query = query.filter(Repository.visibility == visibility)
    if is_archived is not None:
        query = query.filter(Repository.is_archived == (1 if is_archived else 0))
    repos = query.order_by(Repository.id).all()
    result = RepositoryListResponse(repositories=[repo_out(session, r) for r in repos])
    session.close()
    return result


@app.get(
    "/api/repositories/{repository_id}",
    summary="Get a repository",
    description="Return one repository's settings and metadata.",
    tags=["repositories"],
    operation_id="get_repository",
    response_model=RepositoryResponse,
)
async def get_repository(repository_id: int = Path(..., description="Repository ID")):
    session = SessionLocal()
    repo = session.query(Repository).filter(Repository.id == repository_id).first()
    result = repo_out(session, repo)
    session.close()
    return result


@app.post(
    "/api/repositories",
    summary="Create a repository",
    description="Create a repository in an organisation. With auto_init the default branch is created with an initial commit by the current user.",
    tags=["repositories"],
    operation_id="create_repository",
    response_model=RepositoryResponse,
)
async def create_repository(body: RepositoryCreateRequest = Body(...)):
    session = SessionLocal()
    repo = Repository(
        org_id=body.org_id,
        name=body.name,
        description=body.description,
        visibility=body.visibility,
        default_branch=body.default_branch,
        primary_language=body.primary_language,
        is_archived=0,
        stars_count=0,
    )
    session.add(repo)
    session.flush()
    if body.auto_init:
        sha = make_sha(repo.id, body.name, "initial", utcnow().isoformat())
        branch = Branch(repository_id=repo.id, name=body.default_branch, head_commit_sha=sha, is_protected=0)
        session.add(branch)
        session.flush()
        session.add(Commit(repository_id=repo.id, branch_id=branch.id, sha=sha, message="Initial commit",
                           author_id=CURRENT_USER_ID, additions=1, deletions=0))
    session.commit()
    session.refresh(repo)
    result = repo_out(session, repo)
    session.close()
    return result


@app.patch(
    "/api/repositories/{repository_id}",
    summary="Update repository settings",
    description="Rename, re-describe, change visibility or default branch, or archive/unarchive a repository.",
    tags=["repositories"],
    operation_id="update_repository",
    response_model=RepositoryResponse,
)
async def update_repository(
    repository_id: int = Path(..., description="Repository ID"),
    body: RepositoryUpdateRequest = Body(...),
):
    session = SessionLocal()
    repo = session.query(Repository).filter(Repository.id == repository_id).first()
    for key, value in body.model_dump(exclude_unset=True).items():
        if key == "is_archived":
            value = 1 if value else 0
        if key == "default_branch":
            branch = session.query(Branch).filter(Branch.repository_id == repo.id, Branch.name == value).first()
            value = branch.name
        setattr(repo, key, value)
    repo.updated_at = utcnow()
    session.commit()
    session.refresh(repo)
    result = repo_out(session, repo)
    session.close()
    return result


@app.delete(
    "/api/repositories/{repository_id}",
    summary="Delete a repository",
    description="Permanently delete a repository with its branches, commits, issues, pull requests, labels, milestones, releases and webhooks.",
    tags=["repositories"],
    operation_id="delete_repository",
    response_model=DeleteResponse,
)
async def delete_repository(repository_id: int = Path(..., description="Repository ID")):
    session = SessionLocal()
    repo = session.query(Repository).filter(Repository.id == repository_id).first()
    rid = repo.id
    issue_ids = [i.id for i in session.query(Issue).filter(Issue.repository_id == rid).all()]
    pr_ids = [p.id for p in session.query(PullRequest).filter(PullRequest.repository_id == rid).all()]
    if issue_ids:
        session.query(IssueLabel).filter(IssueLabel.issue_id.in_(issue_ids)).delete(synchronize_session=False)
        session.query(IssueAssignee).filter(IssueAssignee.issue_id.in_(issue_ids)).delete(synchronize_session=False)
        session.query(Comment).filter(Comment.issue_id.in_(issue_ids)).delete(synchronize_session=False)
    if pr_ids:
        session.query(PullRequestReview).filter(PullRequestReview.pull_request_id.in_(pr_ids)).delete(synchronize_session=False)
        session.query(Comment).filter(Comment.pull_request_id.in_(pr_ids)).delete(synchronize_session=False)
    for model in (Issue, PullRequest, Commit, Branch, Label, Milestone, Release, Webhook):
        session.query(model).filter(model.repository_id == rid).delete(synchronize_session=False)
    session.delete(repo)
    session.commit()
    session.close()
    return DeleteResponse(id=rid, deleted=True)


# ---------------------------------------------------------------------------
# Branches & commits
# ---------------------------------------------------------------------------

@app.get(
    "/api/repositories/{repository_id}/branches",
    summary="List branches",
    description="List the branches of a repository, optionally filtered by name (substring) or protection.",
    tags=["branches"],
    operation_id="list_branches",
    response_model=BranchListResponse,
)
async def list_branches(
    repository_id: int = Path(..., description="Repository ID"),
    name: Optional[str] = Query(None, description="Case-insensitive substring of the branch name"),
    is_protected: Optional[bool] = Query(None, description="Filter by protection"),
):
    session = SessionLocal()
    query = session.query(Branch).filter(Branch.repository_id == repository_id)
    if name:
        query = query.filter(Branch.name.ilike(f"%{name}%"))
    if is_protected is not None:
        query = query.filter(Branch.is_protected == (1 if is_protected else 0))
    branches = query.order_by(Branch.id).all()
    session.close()
    return BranchListResponse(branches=[BranchResponse.model_validate(b) for b in branches])


@app.post(
    "/api/repositories/{repository_id}/branches",
    summary="Create a branch",
    description="Create a branch pointing at the tip of from_branch (default: the repository's default branch).",
    tags=["branches"],
    operation_id="create_branch",
    response_model=BranchResponse,
)
async def create_branch(
    repository_id: int = Path(..., description="Repository ID"),
    body: BranchCreateRequest = Body(...),
):
    session = SessionLocal()
    repo = session.query(Repository).filter(Repository.id == repository_id).first()
    source_name = body.from_branch or repo.default_branch
    source = session.query(Branch).filter(Branch.repository_id == repo.id, Branch.name == source_name).first()
    branch = Branch(repository_id=repo.id, name=body.name, head_commit_sha=source.head_commit_sha, is_protected=0)
    session.add(branch)
    session.commit()
    session.refresh(branch)
    session.close()
    return BranchResponse.model_validate(branch)


@app.patch(
    "/api/branches/{branch_id}",
    summary="Update branch protection",
    description="Turn branch protection on or off.",
    tags=["branches"],
    operation_id="update_branch_protection",
    response_model=BranchResponse,
)
async def update_branch_protection(
    branch_id: int = Path(..., description="Branch ID"),
    body: BranchUpdateRequest = Body(...),
):
    session = SessionLocal()
    branch = session.query(Branch).filter(Branch.id == branch_id).first()
    branch.is_protected = 1 if body.is_protected else 0
    session.commit()
    session.refresh(branch)
    session.close()
    return BranchResponse.model_validate(branch)


@app.delete(
    "/api/branches/{branch_id}",
    summary="Delete a branch",
    description="Delete a branch. Its commits stay in the repository history.",
    tags=["branches"],
    operation_id="delete_branch",
    response_model=DeleteResponse,
)
async def delete_branch(branch_id: int = Path(..., description="Branch ID")):
    session = SessionLocal()
    branch = session.query(Branch).filter(Branch.id == branch_id).first()
    bid = branch.id
    session.delete(branch)
    session.commit()
    session.close()
    return DeleteResponse(id=bid, deleted=True)


@app.get(
    "/api/repositories/{repository_id}/commits",
    summary="List commits",
    description="List commits of a repository, newest first, optionally only those made on one branch or by one author.",
    tags=["commits"],
    operation_id="list_commits",
    response_model=CommitListResponse,
)
async def list_commits(
    repository_id: int = Path(..., description="Repository ID"),
    branch_id: Optional[int] = Query(None, description="Only commits made on this branch ID"),
    author_id: Optional[int] = Query(None, description="Only commits by this user ID"),
    limit: int = Query(50, ge=1, le=200, description="Maximum number of commits"),
):
    session = SessionLocal()
    query = session.query(Commit).filter(Commit.repository_id == repository_id)
    if branch_id is not None:
        query = query.filter(Commit.branch_id == branch_id)
    if author_id is not None:
        query = query.filter(Commit.author_id == author_id)
    commits = query.order_by(Commit.committed_at.desc(), Commit.id.desc()).limit(limit).all()
    session.close()
    return CommitListResponse(commits=[CommitResponse.model_validate(c) for c in commits])


# ---------------------------------------------------------------------------
# Labels & milestones
# ---------------------------------------------------------------------------

@app.get(
    "/api/repositories/{repository_id}/labels",
    summary="List labels",
    description="List the issue labels defined in a repository, optionally filtered by name (substring).",
    tags=["labels"],
    operation_id="list_labels",
    response_model=LabelListResponse,
)
async def list_labels(
    repository_id: int = Path(..., description="Repository ID"),
    name: Optional[str] = Query(None, description="Substring of the label name"),
):
    session = SessionLocal()
    query = session.query(Label).filter(Label.repository_id == repository_id)
    if name:
        query = query.filter(Label.name.ilike(f"%{name}%"))
    labels = query.order_by(Label.id).all()
    session.close()
    return LabelListResponse(labels=[LabelResponse.model_validate(l) for l in labels])


@app.post(
    "/api/repositories/{repository_id}/labels",
    summary="Create a label",
    description="Define a new label in a repository. The colour is stored as 6 lowercase hex digits without #.",
    tags=["labels"],
    operation_id="create_label",
    response_model=LabelResponse,
)
async def create_label(
    repository_id: int = Path(..., description="Repository ID"),
    body: LabelCreateRequest = Body(...),
):
    session = SessionLocal()
    label = Label(repository_id=repository_id, name=body.name, color=body.color.lstrip("#").lower(), description=body.description)
    session.add(label)
    session.commit()
    session.refresh(label)
    session.close()
    return LabelResponse.model_validate(label)


@app.delete(
    "/api/labels/{label_id}",
    summary="Delete a label",
    description="Delete a label and remove it from every issue that carries it.",
    tags=["labels"],
    operation_id="delete_label",
    response_model=DeleteResponse,
)
async def delete_label(label_id: int = Path(..., description="Label ID")):
    session = SessionLocal()
    label = session.query(Label).filter(Label.id == label_id).first()
    lid = label.id
    session.query(IssueLabel).filter(IssueLabel.label_id == lid).delete(synchronize_session=False)
    session.delete(label)
    session.commit()
    session.close()
    return DeleteResponse(id=lid, deleted=True)


@app.get(
    "/api/repositories/{repository_id}/milestones",
    summary="List milestones",
    description="List milestones of a repository with open/closed issue counts, filtered by state or title (substring).",
    tags=["milestones"],
    operation_id="list_milestones",
    response_model=MilestoneListResponse,
)
async def list_milestones(
    repository_id: int = Path(..., description="Repository ID"),
    state: Optional[str] = Query(None, description="open or closed"),
    title: Optional[str] = Query(None, description="Substring of the milestone title"),
):
    session = SessionLocal()
    query = session.query(Milestone).filter(Milestone.repository_id == repository_id)
    if state:
        query = query.filter(Milestone.state == state)
    if title:
        query = query.filter(Milestone.title.ilike(f"%{title}%"))
    milestones = query.order_by(Milestone.id).all()
    result = MilestoneListResponse(milestones=[milestone_out(session, m) for m in milestones])
    session.close()
    return result


@app.post(
    "/api/repositories/{repository_id}/milestones",
    summary="Create a milestone",
    description="Create an open milestone in a repository.",
    tags=["milestones"],
    operation_id="create_milestone",
    response_model=MilestoneResponse,
)
async def create_milestone(
    repository_id: int = Path(..., description="Repository ID"),
    body: MilestoneCreateRequest = Body(...),
):
    session = SessionLocal()
    ms = Milestone(repository_id=repository_id, title=body.title, description=body.description, due_on=body.due_on, state="open")
    session.add(ms)
    session.commit()
    session.refresh(ms)
    result = milestone_out(session, ms)
    session.close()
    return result


@app.patch(
    "/api/milestones/{milestone_id}",
    summary="Update a milestone",
    description="Rename, re-describe, reschedule, close or reopen a milestone. Closing sets closed_at.",
    tags=["milestones"],
    operation_id="update_milestone",
    response_model=MilestoneResponse,
)
async def update_milestone(
    milestone_id: int = Path(..., description="Milestone ID"),
    body: MilestoneUpdateRequest = Body(...),
):
    session = SessionLocal()
    ms = session.query(Milestone).filter(Milestone.id == milestone_id).first()
    data = body.model_dump(exclude_unset=True)
    for key, value in data.items():
        setattr(ms, key, value)
    if data.get("state") == "closed" and ms.closed_at is None:
        ms.closed_at = utcnow()
    if data.get("state") == "open":
        ms.closed_at = None
    session.commit()
    session.refresh(ms)
    result = milestone_out(session, ms)
    session.close()
    return result


# ---------------------------------------------------------------------------
# Issues
# ---------------------------------------------------------------------------

@app.get(
    "/api/repositories/{repository_id}/issues",
    summary="List issues",
    description="List issues of a repository, filtered by state, label name, assignee username, milestone or a title search.",
    tags=["issues"],
    operation_id="list_issues",
    response_model=IssueListResponse,
)
async def list_issues(
    repository_id: int = Path(..., description="Repository ID"),
    state: Optional[str] = Query(None, description="open or closed (default: both)"),
    label: Optional[str] = Query(None, description="Exact label name, e.g. bug"),
    assignee: Optional[str] = Query(None, description="Username of an assignee"),
    milestone_id: Optional[int] = Query(None, description="Milestone ID"),
    search: Optional[str] = Query(None, description="Case-insensitive substring of the title"),
):
    session = SessionLocal()
    query = session.query(Issue).filter(Issue.repository_id == repository_id)
    if state:
        query = query.filter(Issue.state == state)
    if label:
        query = (query.join(IssueLabel, IssueLabel.issue_id == Issue.id).join(Label, Label.id == IssueLabel.label_id)
                 .filter(func.lower(Label.name) == label.lower()))
    if assignee:
        query = (query.join(IssueAssignee, IssueAssignee.issue_id == Issue.id).join(User, User.id == IssueAssignee.user_id)
                 .filter(func.lower(User.username) == assignee.lower()))
    if milestone_id is not None:
        query = query.filter(Issue.milestone_id == milestone_id)
    if search:
        query = query.filter(Issue.title.ilike(f"%{search}%"))
    issues = query.order_by(Issue.number.desc()).all()
    result = IssueListResponse(issues=[issue_out(session, i) for i in issues])
    session.close()
    return result


@app.get(
    "/api/issues/{issue_id}",
    summary="Get an issue",
    description="Return one issue with its labels and assignees.",
    tags=["issues"],
    operation_id="get_issue",
    response_model=IssueResponse,
)
async def get_issue(issue_id: int = Path(..., description="Issue ID")):
    session = SessionLocal()
    issue = session.query(Issue).filter(Issue.id == issue_id).first()
    result = issue_out(session, issue)
    session.close()
    return result


@app.post(
    "/api/repositories/{repository_id}/issues",
    summary="Open an issue",
    description="Open a new issue authored by the current user; it gets the next #number of the repository. Add labels and assignees with add_issue_labels / add_issue_assignees.",
    tags=["issues"],
    operation_id="create_issue",
    response_model=IssueResponse,
)
async def create_issue(
    repository_id: int = Path(..., description="Repository ID"),
    body: IssueCreateRequest = Body(...),
):
    session = SessionLocal()
    repo = session.query(Repository).filter(Repository.id == repository_id).first()
    issue = Issue(
        repository_id=repo.id,
        number=next_number(session, repo.id),
        title=body.title,
        body=body.body,
        state="open",
        author_id=CURRENT_USER_ID,
        milestone_id=body.milestone_id,
    )
    session.add(issue)
    session.commit()
    session.refresh(issue)
    result = issue_out(session, issue)
    session.close()
    return result


@app.patch(
    "/api/issues/{issue_id}",
    summary="Update an issue",
    description="Edit title/body, set or clear the milestone, or close/reopen the issue (closing records closed_at and a state_reason, default completed).",
    tags=["issues"],
    operation_id="update_issue",
    response_model=IssueResponse,
)
async def update_issue(
    issue_id: int = Path(..., description="Issue ID"),
    body: IssueUpdateRequest = Body(...),
):
    session = SessionLocal()
    issue = session.query(Issue).filter(Issue.id == issue_id).first()
    data = body.model_dump(exclude_unset=True)
    for key in ("title", "body", "milestone_id"):
        if key in data:
            setattr(issue, key, data[key])
    if data.get("state") == "closed":
        if issue.state != "closed":
            issue.closed_at = utcnow()
        issue.state = "closed"
        issue.state_reason = data.get("state_reason") or "completed"
    elif data.get("state") == "open":
        if issue.state == "closed":
            issue.state_reason = "reopened"
        issue.state = "open"
        issue.closed_at = None
    elif "state_reason" in data and issue.state == "closed":
        issue.state_reason = data["state_reason"]
    issue.updated_at = utcnow()
    session.commit()
    session.refresh(issue)
    result = issue_out(session, issue)
    session.close()
    return result


@app.post(
    "/api/issues/{issue_id}/labels",
    summary="Add labels to an issue",
    description="Attach one or more labels (by label ID) to an issue. Labels already present are ignored.",
    tags=["issues"],
    operation_id="add_issue_labels",
    response_model=IssueResponse,
)
async def add_issue_labels(
    issue_id: int = Path(..., description="Issue ID"),
    body: IssueLabelsAddRequest = Body(...),
):
    session = SessionLocal()
    issue = session.query(Issue).filter(Issue.id == issue_id).first()
    for label_id in body.label_ids:
        label = session.query(Label).filter(Label.id == label_id, Label.repository_id == issue.repository_id).first()
        exists = session.query(IssueLabel).filter(IssueLabel.issue_id == issue.id, IssueLabel.label_id == label.id).first()
        if exists is None:
            session.add(IssueLabel(issue_id=issue.id, label_id=label.id))
    issue.updated_at = utcnow()
    session.commit()
    result = issue_out(session, issue)
    session.close()
    return result


@app.delete(
    "/api/issues/{issue_id}/labels/{label_id}",
    summary="Remove a label from an issue",
    description="Detach one label from an issue.",
    tags=["issues"],
    operation_id="remove_issue_label",
    response_model=IssueResponse,
)
async def remove_issue_label(
    issue_id: int = Path(..., description="Issue ID"),
    label_id: int = Path(..., description="Label ID"),
):
    session = SessionLocal()
    issue = session.query(Issue).filter(Issue.id == issue_id).first()
    link = session.query(IssueLabel).filter(IssueLabel.issue_id == issue.id, IssueLabel.label_id == label_id).first()
    session.delete(link)
    issue.updated_at = utcnow()
    session.commit()
    result = issue_out(session, issue)
    session.close()
    return result


@app.post(
    "/api/issues/{issue_id}/assignees",
    summary="Assign users to an issue",
    description="Add one or more assignees (by user ID) to an issue. Users already assigned are ignored.",
    tags=["issues"],
    operation_id="add_issue_assignees",
    response_model=IssueResponse,
)
async def add_issue_assignees(
    issue_id: int = Path(..., description="Issue ID"),
    body: IssueAssigneesAddRequest = Body(...),
):
    session = SessionLocal()
    issue = session.query(Issue).filter(Issue.id == issue_id).first()
    for user_id in body.user_ids:
        user = session.query(User).filter(User.id == user_id).first()
        exists = session.query(IssueAssignee).filter(IssueAssignee.issue_id == issue.id, IssueAssignee.user_id == user.id).first()
        if exists is None:
            session.add(IssueAssignee(issue_id=issue.id, user_id=user.id))
    issue.updated_at = utcnow()
    session.commit()
    result = issue_out(session, issue)
    session.close()
    return result


@app.delete(
    "/api/issues/{issue_id}/assignees/{user_id}",
    summary="Unassign a user from an issue",
    description="Remove one assignee from an issue.",
    tags=["issues"],
    operation_id="remove_issue_assignee",
    response_model=IssueResponse,
)
async def remove_issue_assignee(
    issue_id: int = Path(..., description="Issue ID"),
    user_id: int = Path(..., description="User ID of the assignee"),
):
    session = SessionLocal()
    issue = session.query(Issue).filter(Issue.id == issue_id).first()
    link = session.query(IssueAssignee).filter(IssueAssignee.issue_id == issue.id, IssueAssignee.user_id == user_id).first()
    session.delete(link)
    issue.updated_at = utcnow()
    session.commit()
    result = issue_out(session, issue)
    session.close()
    return result


# ---------------------------------------------------------------------------
# Comments
# ---------------------------------------------------------------------------

@app.get(
    "/api/comments",
    summary="List comments",
    description="List the conversation of an issue (issue_id) or of a pull request (pull_request_id), oldest first.",
    tags=["comments"],
    operation_id="list_comments",
    response_model=CommentListResponse,
)
async def list_comments(
    issue_id: Optional[int] = Query(None, description="Issue ID"),
    pull_request_id: Optional[int] = Query(None, description="Pull request ID"),
):
    session = SessionLocal()
    query = session.query(Comment)
    if issue_id is not None:
        query = query.filter(Comment.issue_id == issue_id)
    if pull_request_id is not None:
        query = query.filter(Comment.pull_request_id == pull_request_id)
    comments = query.order_by(Comment.created_at, Comment.id).all()
    session.close()
    return CommentListResponse(comments=[CommentResponse.model_validate(c) for c in comments])


@app.post(
    "/api/issues/{issue_id}/comments",
    summary="Comment on an issue",
    description="Post a comment on an issue as the current user.",
    tags=["comments"],
    operation_id="create_issue_comment",
    response_model=CommentResponse,
)
async def create_issue_comment(
    issue_id: int = Path(..., description="Issue ID"),
    body: CommentCreateRequest = Body(...),
):
    session = SessionLocal()
    issue = session.query(Issue).filter(Issue.id == issue_id).first()
    comment = Comment(issue_id=issue.id, author_id=CURRENT_USER_ID, body=body.body)
    session.add(comment)
    issue.updated_at = utcnow()
    session.commit()
    session.refresh(comment)
    session.close()
    return CommentResponse.model_validate(comment)


@app.post(
    "/api/pull-requests/{pull_request_id}/comments",
    summary="Comment on a pull request",
    description="Post a conversation comment on a pull request as the current user.",
    tags=["comments"],
    operation_id="create_pull_request_comment",
    response_model=CommentResponse,
)
async def create_pull_request_comment(
    pull_request_id: int = Path(..., description="Pull request ID"),
    body: CommentCreateRequest = Body(...),
):
    session = SessionLocal()
    pr = session.query(PullRequest).filter(PullRequest.id == pull_request_id).first()
    comment = Comment(pull_request_id=pr.id, author_id=CURRENT_USER_ID, body=body.body)
    session.add(comment)
    pr.updated_at = utcnow()
    session.commit()
    session.refresh(comment)
    session.close()
    return CommentResponse.model_validate(comment)


# ---------------------------------------------------------------------------
# Pull requests
# ---------------------------------------------------------------------------

@app.get(
    "/api/repositories/{repository_id}/pulls",
    summary="List pull requests",
    description="List pull requests of a repository, filtered by state, author, head branch or a title search.",
    tags=["pull_requests"],
    operation_id="list_pull_requests",
    response_model=PullRequestListResponse,
)
async def list_pull_requests(
    repository_id: int = Path(..., description="Repository ID"),
    state: Optional[str] = Query(None, description="open, closed or merged"),
    author_id: Optional[int] = Query(None, description="Author user ID"),
    head_branch: Optional[str] = Query(None, description="Exact head branch name"),
    search: Optional[str] = Query(None, description="Case-insensitive substring of the title"),
):
    session = SessionLocal()
    query = session.query(PullRequest).filter(PullRequest.repository_id == repository_id)
    if state:
        query = query.filter(PullRequest.state == state)
    if author_id is not None:
        query = query.filter(PullRequest.author_id == author_id)
    if head_branch:
        query = query.filter(PullRequest.head_branch == head_branch)
    if search:
        query = query.filter(PullRequest.title.ilike(f"%{search}%"))
    prs = query.order_by(PullRequest.number.desc()).all()
    session.close()
    return PullRequestListResponse(pull_requests=[PullRequestResponse.model_validate(p) for p in prs])


@app.get(
    "/api/pull-requests/{pull_request_id}",
    summary="Get a pull request",
    description="Return one pull request with its reviews.",
    tags=["pull_requests"],
    operation_id="get_pull_request",
    response_model=PullRequestDetailResponse,
)
async def get_pull_request(pull_request_id: int = Path(..., description="Pull request ID")):
    session = SessionLocal()
    pr = session.query(PullRequest).filter(PullRequest.id == pull_request_id).first()
    result = pr_detail(session, pr)
    session.close()
    return result


@app.post(
    "/api/repositories/{repository_id}/pulls",
    summary="Open a pull request",
    description="Open a pull request from an existing head branch into a base branch (default: the repository's default branch). It gets the next #number of the repository.",
    tags=["pull_requests"],
    operation_id="create_pull_request",
    response_model=PullRequestDetailResponse,
)
async def create_pull_request(
    repository_id: int = Path(..., description="Repository ID"),
    body: PullRequestCreateRequest = Body(...),
):
    session = SessionLocal()
    repo = session.query(Repository).filter(Repository.id == repository_id).first()
    head = session.query(Branch).filter(Branch.repository_id == repo.id, Branch.name == body.head_branch).first()
    base = session.query(Branch).filter(Branch.repository_id == repo.id, Branch.name == (body.base_branch or repo.default_branch)).first()
    pr = PullRequest(
        repository_id=repo.id,
        number=next_number(session, repo.id),
        title=body.title,
        body=body.body,
        author_id=CURRENT_USER_ID,
        head_branch=head.name,
        base_branch=base.name,
        state="open",
        is_draft=1 if body.is_draft else 0,
    )
    session.add(pr)
    session.commit()
    session.refresh(pr)
    result = pr_detail(session, pr)
    session.close()
    return result


@app.patch(
    "/api/pull-requests/{pull_request_id}",
    summary="Update a pull request",
    description="Edit title/body/base branch, mark a draft ready for review, or close/reopen without merging.",
    tags=["pull_requests"],
    operation_id="update_pull_request",
    response_model=PullRequestDetailResponse,
)
async def update_pull_request(
    pull_request_id: int = Path(..., description="Pull request ID"),
    body: PullRequestUpdateRequest = Body(...),
):
    session = SessionLocal()
    pr = session.query(PullRequest).filter(PullRequest.id == pull_request_id).first()
    data = body.model_dump(exclude_unset=True)
    for key in ("title", "body", "base_branch"):
        if key in data:
            setattr(pr, key, data[key])
    if "is_draft" in data:
        pr.is_draft = 1 if data["is_draft"] else 0
    if data.get("state") == "closed" and pr.state == "open":
        pr.state = "closed"
        pr.closed_at = utcnow()
    elif data.get("state") == "open" and pr.state == "closed":
        pr.state = "open"
        pr.closed_at = None
    pr.updated_at = utcnow()
    session.commit()
    session.refresh(pr)
    result = pr_detail(session, pr)
    session.close()
    return result


@app.post(
    "/api/pull-requests/{pull_request_id}/reviews",
    summary="Review a pull request",
    description="Submit a review as the current user: approved, changes_requested or commented, with an optional summary.",
    tags=["pull_requests"],
    operation_id="create_pull_request_review",
    response_model=ReviewResponse,
)
async def create_pull_request_review(
    pull_request_id: int = Path(..., description="Pull request ID"),
    body: ReviewCreateRequest = Body(...),
):
    session = SessionLocal()
    pr = session.query(PullRequest).filter(PullRequest.id == pull_request_id).first()
    review = PullRequestReview(pull_request_id=pr.id, reviewer_id=CURRENT_USER_ID, state=body.state, body=body.body)
    session.add(review)
    pr.updated_at = utcnow()
    session.commit()
    session.refresh(review)
    session.close()
    return ReviewResponse.model_validate(review)


@app.post(
    "/api/pull-requests/{pull_request_id}/merge",
    summary="Merge a pull request",
    description=(
        "Merge an open, non-draft pull request into its base branch as the current user. A merge commit is added to "
        "the base branch and becomes its head. The head branch is kept and linked issues are not closed automatically."
    ),
    tags=["pull_requests"],
    operation_id="merge_pull_request",
    response_model=PullRequestDetailResponse,
)
async def merge_pull_request(
    pull_request_id: int = Path(..., description="Pull request ID"),
    body: Optional[MergeRequest] = Body(None),
):
    if body is None:
        body = MergeRequest()
    session = SessionLocal()
    pr = session.query(PullRequest).filter(PullRequest.id == pull_request_id, PullRequest.state == "open", PullRequest.is_draft == 0).first()
    base = session.query(Branch).filter(Branch.repository_id == pr.repository_id, Branch.name == pr.base_branch).first()
    head = session.query(Branch).filter(Branch.repository_id == pr.repository_id, Branch.name == pr.head_branch).first()
    head_commits = []
    if head is not None:
        head_commits = session.query(Commit).filter(Commit.branch_id == head.id).all()
    if body.commit_title:
        message = body.commit_title
    elif body.merge_method == "merge":
        message = f"Merge pull request #{pr.number} from {pr.head_branch}"
    else:
        message = f"{pr.title} (#{pr.number})"
    now = utcnow()
    sha = make_sha(pr.repository_id, pr.id, message, now.isoformat())
    session.add(Commit(
        repository_id=pr.repository_id,
        branch_id=base.id,
        sha=sha,
        message=message,
        author_id=pr.author_id if body.merge_method != "merge" else CURRENT_USER_ID,
        additions=sum(c.additions for c in head_commits),
        deletions=sum(c.deletions for c in head_commits),
        committed_at=now,
    ))
    base.head_commit_sha = sha
    pr.state = "merged"
    pr.merge_method = body.merge_method
    pr.merge_commit_sha = sha
    pr.merged_by_id = CURRENT_USER_ID
    pr.merged_at = now
    pr.closed_at = now
    pr.updated_at = now
    session.commit()
    session.refresh(pr)
    result = pr_detail(session, pr)
    session.close()
    return result


# ---------------------------------------------------------------------------
# Releases
# ---------------------------------------------------------------------------

@app.get(
    "/api/repositories/{repository_id}/releases",
    summary="List releases",
    description="List releases of a repository, newest first, optionally including drafts.",
    tags=["releases"],
    operation_id="list_releases",
    response_model=ReleaseListResponse,
)
async def list_releases(
    repository_id: int = Path(..., description="Repository ID"),
    include_drafts: bool = Query(True, description="Include draft releases"),
):
    session = SessionLocal()
    query = session.query(Release).filter(Release.repository_id == repository_id)
    if not include_drafts:
        query = query.filter(Release.is_draft == 0)
    releases = query.order_by(Release.created_at.desc(), Release.id.desc()).all()
    session.close()
    return ReleaseListResponse(releases=[ReleaseResponse.model_validate(r) for r in releases])


@app.post(
    "/api/repositories/{repository_id}/releases",
    summary="Create a release",
    description="Tag the tip of a branch (default: the default branch) and publish a release, or save it as a draft.",
    tags=["releases"],
    operation_id="create_release",
    response_model=ReleaseResponse,
)
async def create_release(
    repository_id: int = Path(..., description="Repository ID"),
    body: ReleaseCreateRequest = Body(...),
):
    session = SessionLocal()
    repo = session.query(Repository).filter(Repository.id == repository_id).first()
    target = session.query(Branch).filter(Branch.repository_id == repo.id, Branch.name == (body.target_branch or repo.default_branch)).first()
    release = Release(
        repository_id=repo.id,
        tag_name=body.tag_name,
        name=body.name,
        body=body.body,
        target_branch=target.name,
        is_draft=1 if body.is_draft else 0,
        is_prerelease=1 if body.is_prerelease else 0,
        author_id=CURRENT_USER_ID,
        published_at=None if body.is_draft else utcnow(),
    )
    session.add(release)
    session.commit()
    session.refresh(release)
    session.close()
    return ReleaseResponse.model_validate(release)


@app.delete(
    "/api/releases/{release_id}",
    summary="Delete a release",
    description="Delete a release (the tag is kept).",
    tags=["releases"],
    operation_id="delete_release",
    response_model=DeleteResponse,
)
async def delete_release(release_id: int = Path(..., description="Release ID")):
    session = SessionLocal()
    release = session.query(Release).filter(Release.id == release_id).first()
    rid = release.id
    session.delete(release)
    session.commit()
    session.close()
    return DeleteResponse(id=rid, deleted=True)


# ---------------------------------------------------------------------------
# Webhooks
# ---------------------------------------------------------------------------

@app.get(
    "/api/repositories/{repository_id}/hooks",
    summary="List webhooks",
    description="List the webhooks configured on a repository.",
    tags=["webhooks"],
    operation_id="list_webhooks",
    response_model=WebhookListResponse,
)
async def list_webhooks(repository_id: int = Path(..., description="Repository ID")):
    session = SessionLocal()
    hooks = session.query(Webhook).filter(Webhook.repository_id == repository_id).order_by(Webhook.id).all()
    session.close()
    return WebhookListResponse(webhooks=[webhook_out(h) for h in hooks])


@app.post(
    "/api/repositories/{repository_id}/hooks",
    summary="Create a webhook",
    description="Register a payload URL that receives the selected events (push, pull_request, issues, ...) for a repository.",
    tags=["webhooks"],
    operation_id="create_webhook",
    response_model=WebhookResponse,
)
async def create_webhook(
    repository_id: int = Path(..., description="Repository ID"),
    body: WebhookCreateRequest = Body(...),
):
    session = SessionLocal()
    repo = session.query(Repository).filter(Repository.id == repository_id).first()
    events = []
    for e in body.events:
        if e not in events:
            events.append(e)
    hook = Webhook(repository_id=repo.id, url=body.url, events=",".join(events), content_type=body.content_type,
                   is_active=1 if body.is_active else 0)
    session.add(hook)
    session.commit()
    session.refresh(hook)
    session.close()
    return webhook_out(hook)


@app.patch(
    "/api/hooks/{hook_id}",
    summary="Update a webhook",
    description="Change a webhook's URL, events, content type or active flag.",
    tags=["webhooks"],
    operation_id="update_webhook",
    response_model=WebhookResponse,
)
async def update_webhook(
    hook_id: int = Path(..., description="Webhook ID"),
    body: WebhookUpdateRequest = Body(...),
):
    session = SessionLocal()
    hook = session.query(Webhook).filter(Webhook.id == hook_id).first()
    data = body.model_dump(exclude_unset=True)
    if data.get("url") is not None:
        hook.url = data["url"]
    if data.get("events") is not None:
        events = []
        for e in data["events"]:
            if e not in events:
                events.append(e)
        hook.events = ",".join(events)
    if data.get("content_type") is not None:
        hook.content_type = data["content_type"]
    if data.get("is_active") is not None:
        hook.is_active = 1 if data["is_active"] else 0
    session.commit()
    session.refresh(hook)
    session.close()
    return webhook_out(hook)


@app.delete(
    "/api/hooks/{hook_id}",
    summary="Delete a webhook",
    description="Remove a webhook from its repository.",
    tags=["webhooks"],
    operation_id="delete_webhook",
    response_model=DeleteResponse,
)
async def delete_webhook(hook_id: int = Path(..., description="Webhook ID")):
    session = SessionLocal()
    hook = session.query(Webhook).filter(Webhook.id == hook_id).first()
    hid = hook.id
    session.delete(hook)
    session.commit()
    session.close()
    return DeleteResponse(id=hid, deleted=True)


if __name__ == "__main__":
    import uvicorn
    uvicorn.run(app, host=os.getenv("HOST", "127.0.0.1"), port=int(os.getenv("PORT", "8000")))
