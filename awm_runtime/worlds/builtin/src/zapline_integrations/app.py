import os
import json
from typing import List, Optional, Dict, Any, Literal
from datetime import datetime, date, timezone

from fastapi import FastAPI, Query, Path, Body
from pydantic import BaseModel, Field, ConfigDict, field_validator
from sqlalchemy import (
    create_engine, Column, Integer, String, Text, Boolean, Date, DateTime, ForeignKey, UniqueConstraint, or_, func
)
from sqlalchemy.orm import declarative_base, sessionmaker

engine = create_engine(os.getenv("DATABASE_PATH", "sqlite:///zapline_integrations.db"), connect_args={"check_same_thread": False})
SessionLocal = sessionmaker(bind=engine, expire_on_commit=False)
Base = declarative_base()

CURRENT_USER_ID = 1


def _now() -> datetime:
    return datetime.now(timezone.utc).replace(tzinfo=None, microsecond=0)


def _dt(value: Any) -> Optional[str]:
    if value is None:
        return None
    if isinstance(value, str):
        return value
    if isinstance(value, datetime):
        return value.replace(microsecond=0).isoformat()
    return value.isoformat()


def _load_json(value: Optional[str]) -> Any:
    if value is None or value == "":
        return None
    return json.loads(value)


# ---------------------------------------------------------------------------
# ORM models (mirror schema.sql)
# ---------------------------------------------------------------------------

class Workspace(Base):
    __tablename__ = "workspaces"
    id = Column(Integer, primary_key=True, autoincrement=True)
    name = Column(String, nullable=False, unique=True)
    slug = Column(String, nullable=False, unique=True)
    plan = Column(String, nullable=False, default="free")
    task_quota_monthly = Column(Integer, nullable=False)
    tasks_used_this_month = Column(Integer, nullable=False, default=0)
    billing_cycle_start = Column(Date, nullable=False)
    created_at = Column(DateTime, nullable=False, default=_now)


class User(Base):
    __tablename__ = "users"
    id = Column(Integer, primary_key=True, autoincrement=True)
    email = Column(String, nullable=False, unique=True)
    full_name = Column(String, nullable=False)
    timezone = Column(String, nullable=False, default="UTC")
    created_at = Column(DateTime, nullable=False, default=_now)


class WorkspaceMember(Base):
    __tablename__ = "workspace_members"
    id = Column(Integer, primary_key=True, autoincrement=True)
    workspace_id = Column(Integer, ForeignKey("workspaces.id", ondelete="CASCADE"), nullable=False)
    user_id = Column(Integer, ForeignKey("users.id", ondelete="CASCADE"), nullable=False)
    role = Column(String, nullable=False, default="member")
    joined_at = Column(DateTime, nullable=False, default=_now)
    __table_args__ = (UniqueConstraint("workspace_id", "user_id"),)


class App(Base):
    __tablename__ = "apps"
    id = Column(Integer, primary_key=True, autoincrement=True)
    key = Column(String, nullable=False, unique=True)
    name = Column(String, nullable=False, unique=True)
    category = Column(String, nullable=False)
    auth_type = Column(String, nullable=False)
    is_premium = Column(Boolean, nullable=False, default=False)
    is_builtin = Column(Boolean, nullable=False, default=False)
    description = Column(Text)


class AppEvent(Base):
    __tablename__ = "app_events"
    id = Column(Integer, primary_key=True, autoincrement=True)
    app_id = Column(Integer, ForeignKey("apps.id", ondelete="CASCADE"), nullable=False)
    key = Column(String, nullable=False)
    name = Column(String, nullable=False)
    kind = Column(String, nullable=False)
    is_instant = Column(Boolean, nullable=False, default=False)
    description = Column(Text)
    __table_args__ = (UniqueConstraint("app_id", "key"),)


class Connection(Base):
    __tablename__ = "connections"
    id = Column(Integer, primary_key=True, autoincrement=True)
    workspace_id = Column(Integer, ForeignKey("workspaces.id", ondelete="CASCADE"), nullable=False)
    app_id = Column(Integer, ForeignKey("apps.id", ondelete="RESTRICT"), nullable=False)
    owner_user_id = Column(Integer, ForeignKey("users.id", ondelete="RESTRICT"), nullable=False)
    label = Column(String, nullable=False)
    account_identifier = Column(String, nullable=False)
    status = Column(String, nullable=False, default="active")
    last_verified_at = Column(DateTime)
    created_at = Column(DateTime, nullable=False, default=_now)
    __table_args__ = (UniqueConstraint("workspace_id", "label"),)


class Zap(Base):
    __tablename__ = "zaps"
    id = Column(Integer, primary_key=True, autoincrement=True)
    workspace_id = Column(Integer, ForeignKey("workspaces.id", ondelete="CASCADE"), nullable=False)
    owner_user_id = Column(Integer, ForeignKey("users.id", ondelete="RESTRICT"), nullable=False)
    name = Column(String, nullable=False)
    description = Column(Text)
    status = Column(String, nullable=False, default="draft")
    status_reason = Column(Text)
    trigger_event_id = Column(Integer, ForeignKey("app_events.id", ondelete="SET NULL"))
    trigger_connection_id = Column(Integer, ForeignKey("connections.id", ondelete="SET NULL"))
    polling_interval_minutes = Column(Integer, nullable=False, default=15)
    last_run_at = Column(DateTime)
    created_at = Column(DateTime, nullable=False, default=_now)
    updated_at = Column(DateTime, nullable=False, default=_now)
    __table_args__ = (UniqueConstraint("workspace_id", "name"),)


class ZapStep(Base):
    __tablename__ = "zap_steps"
    id = Column(Integer, primary_key=True, autoincrement=True)
    zap_id = Column(Integer, ForeignKey("zaps.id", ondelete="CASCADE"), nullable=False)
    position = Column(Integer, nullable=False)
    step_type = Column(String, nullable=False)
    app_event_id = Column(Integer, ForeignKey("app_events.id", ondelete="SET NULL"))
    connection_id = Column(Integer, ForeignKey("connections.id", ondelete="SET NULL"))
    title = Column(String, nullable=False)
    config_json = Column(Text, nullable=False, default="{}")
    created_at = Column(DateTime, nullable=False, default=_now)
    updated_at = Column(DateTime, nullable=False, default=_now)
    __table_args__ = (UniqueConstraint("zap_id", "position"),)


class FieldMapping(Base):
    __tablename__ = "field_mappings"
    id = Column(Integer, primary_key=True, autoincrement=True)
    step_id = Column(Integer, ForeignKey("zap_steps.id", ondelete="CASCADE"), nullable=False)
    target_field = Column(String, nullable=False)
    source_expression = Column(Text, nullable=False)
    created_at = Column(DateTime, nullable=False, default=_now)
    updated_at = Column(DateTime, nullable=False, default=_now)
    __table_args__ = (UniqueConstraint("step_id", "target_field"),)


class FilterCondition(Base):
    __tablename__ = "filter_conditions"
    id = Column(Integer, primary_key=True, autoincrement=True)
    step_id = Column(Integer, ForeignKey("zap_steps.id", ondelete="CASCADE"), nullable=False)
    group_index = Column(Integer, nullable=False, default=0)
    field = Column(String, nullable=False)
    operator = Column(String, nullable=False)
    value = Column(Text)
    created_at = Column(DateTime, nullable=False, default=_now)


class Schedule(Base):
    __tablename__ = "schedules"
    id = Column(Integer, primary_key=True, autoincrement=True)
    zap_id = Column(Integer, ForeignKey("zaps.id", ondelete="CASCADE"), nullable=False, unique=True)
    frequency = Column(String, nullable=False)
    time_of_day = Column(String)
    day_of_week = Column(String)
    day_of_month = Column(Integer)
    timezone = Column(String, nullable=False, default="UTC")
    trigger_on_weekends = Column(Boolean, nullable=False, default=True)
    updated_at = Column(DateTime, nullable=False, default=_now)


class ZapRun(Base):
    __tablename__ = "zap_runs"
    id = Column(Integer, primary_key=True, autoincrement=True)
    zap_id = Column(Integer, ForeignKey("zaps.id", ondelete="CASCADE"), nullable=False)
    status = Column(String, nullable=False)
    trigger_summary = Column(Text)
    trigger_data_json = Column(Text, nullable=False, default="{}")
    tasks_used = Column(Integer, nullable=False, default=0)
    error_message = Column(Text)
    replayed_from_run_id = Column(Integer, ForeignKey("zap_runs.id", ondelete="SET NULL"))
    started_at = Column(DateTime, nullable=False, default=_now)
    finished_at = Column(DateTime)


class RunAttempt(Base):
    __tablename__ = "run_attempts"
    id = Column(Integer, primary_key=True, autoincrement=True)
    run_id = Column(Integer, ForeignKey("zap_runs.id", ondelete="CASCADE"), nullable=False)
    step_id = Column(Integer, ForeignKey("zap_steps.id", ondelete="SET NULL"))
    step_position = Column(Integer, nullable=False)
    attempt_number = Column(Integer, nullable=False, default=1)
    status = Column(String, nullable=False)
    http_status = Column(Integer)
    duration_ms = Column(Integer)
    response_summary = Column(Text)
    error_message = Column(Text)
    created_at = Column(DateTime, nullable=False, default=_now)


class ErrorAlert(Base):
    __tablename__ = "error_alerts"
    id = Column(Integer, primary_key=True, autoincrement=True)
    workspace_id = Column(Integer, ForeignKey("workspaces.id", ondelete="CASCADE"), nullable=False)
    zap_id = Column(Integer, ForeignKey("zaps.id", ondelete="SET NULL"))
    connection_id = Column(Integer, ForeignKey("connections.id", ondelete="SET NULL"))
    run_id = Column(Integer, ForeignKey("zap_runs.id", ondelete="SET NULL"))
    alert_type = Column(String, nullable=False)
    severity = Column(String, nullable=False)
    message = Column(Text, nullable=False)
    status = Column(String, nullable=False, default="open")
    created_at = Column(DateTime, nullable=False, default=_now)
    resolved_at = Column(DateTime)
    resolved_by_user_id = Column(Integer, ForeignKey("users.id", ondelete="SET NULL"))


app = FastAPI(
    title="Zapline Integrations API",
    description="Zapier-style app integration platform: workspaces, connected app accounts, zaps with trigger events and ordered steps, field mappings, filters, schedules, task history and error alerts.",
    version="1.0.0",
)

ZapStatus = Literal["draft", "on", "off", "errored"]
StepType = Literal["action", "search", "filter", "delay", "formatter"]
RunStatus = Literal["success", "filtered", "error", "halted", "held", "playing"]
FilterOperator = Literal["text_contains", "text_does_not_contain", "exactly_matches", "does_not_exactly_match", "starts_with", "ends_with", "greater_than", "less_than", "exists", "does_not_exist", "is_true", "is_false"]
Weekday = Literal["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]


class DeleteResponse(BaseModel):
    id: int = Field(..., description="ID of the deleted object", examples=[15])
    deleted: bool = Field(..., description="True when the object was removed", examples=[True])
    message: str = Field(..., description="Human readable confirmation", examples=["Connection 'Mailchimp - Old Newsletter' deleted"])


# ---------------------------------------------------------------------------
# Users and workspaces
# ---------------------------------------------------------------------------

class UserResponse(BaseModel):
    id: int = Field(..., description="User ID", examples=[1])
    email: str = Field(..., description="Email address", examples=["jordan.rivera@acmecorp.com"])
    full_name: str = Field(..., description="Full name", examples=["Jordan Rivera"])
    timezone: str = Field(..., description="IANA timezone", examples=["America/New_York"])
    created_at: Optional[str] = Field(None, description="Sign-up time (ISO 8601)")
    model_config = ConfigDict(from_attributes=True)


class UserListResponse(BaseModel):
    users: List[UserResponse] = Field(..., description="Matching users")


def _user_out(u: User) -> UserResponse:
    return UserResponse(id=u.id, email=u.email, full_name=u.full_name, timezone=u.timezone, created_at=_dt(u.created_at))


@app.get(
    "/api/me",
    summary="Get the current user",
    description="Returns the signed-in Zapline user (the person the assistant acts for).",
    tags=["users"],
    operation_id="get_current_user",
    response_model=UserResponse,
)
async def get_current_user():
    session = SessionLocal()
    u = session.query(User).filter(User.id == CURRENT_USER_ID).first()
    out = _user_out(u)
    session.close()
    return out


@app.get(
    "/api/users",
    summary="Search users",
    description="Search Zapline users by name or email.",
    tags=["users"],
    operation_id="list_users",
    response_model=UserListResponse,
)
async def list_users(
    search: Optional[str] = Query(None, description="Case-insensitive substring of name or email", examples=["liam"]),
):
    session = SessionLocal()
    q = session.query(User)
    if search:
        like = f"%{search}%"
        q = q.filter(or_(User.full_name.ilike(like), User.email.ilike(like)))
    out = [_user_out(u) for u in q.order_by(User.id).all()]
    session.close()
    return UserListResponse(users=out)


class WorkspaceResponse(BaseModel):
    id: int = Field(..., description="Workspace ID", examples=[1])
    name: str = Field(..., description="Workspace name", examples=["Acme Ops"])
    slug: str = Field(..., description="URL slug", examples=["acme-ops"])
    plan: str = Field(..., description="free, starter, professional, team or company", examples=["team"])
    task_quota_monthly: int = Field(..., description="Tasks included per billing month", examples=[20000])
    tasks_used_this_month: int = Field(..., description="Tasks consumed in the current billing month", examples=[13482])
    billing_cycle_start: Optional[str] = Field(None, description="Start date of the current billing month", examples=["2025-06-01"])
    my_role: Optional[str] = Field(None, description="The current user's role in the workspace, null if not a member", examples=["owner"])
    member_count: int = Field(..., description="Number of members", examples=[6])
    model_config = ConfigDict(from_attributes=True)


class WorkspaceListResponse(BaseModel):
    workspaces: List[WorkspaceResponse] = Field(..., description="Matching workspaces")


def _workspace_out(session, w: Workspace) -> WorkspaceResponse:
    me = session.query(WorkspaceMember).filter(WorkspaceMember.workspace_id == w.id, WorkspaceMember.user_id == CURRENT_USER_ID).first()
    count = session.query(WorkspaceMember).filter(WorkspaceMember.workspace_id == w.id).count()
    return WorkspaceResponse(
        id=w.id, name=w.name, slug=w.slug, plan=w.plan, task_quota_monthly=w.task_quota_monthly,
        tasks_used_this_month=w.tasks_used_this_month, billing_cycle_start=_dt(w.billing_cycle_start),
        my_role=me.role if me is not None else None, member_count=count,
    )


@app.get(
    "/api/workspaces",
    summary="List workspaces",
    description="List team workspaces with plan and task usage, optionally filtered by name. Use it to look up a workspace ID.",
    tags=["workspaces"],
    operation_id="list_workspaces",
    response_model=WorkspaceListResponse,
)
async def list_workspaces(
    name: Optional[str] = Query(None, description="Case-insensitive substring of the workspace name", examples=["Acme Ops"]),
):
    session = SessionLocal()
    q = session.query(Workspace)
    if name:
        q = q.filter(Workspace.name.ilike(f"%{name}%"))
    out = [_workspace_out(session, w) for w in q.order_by(Workspace.id).all()]
    session.close()
    return WorkspaceListResponse(workspaces=out)


class ZapUsage(BaseModel):
    zap_id: int = Field(..., description="Zap ID", examples=[1])
    zap_name: str = Field(..., description="Zap name", examples=["Stripe Payments to QuickBooks"])
    runs: int = Field(..., description="Runs recorded in task history", examples=[8])
    tasks_used: int = Field(..., description="Tasks consumed by those runs", examples=[4])


class WorkspaceUsageResponse(BaseModel):
    workspace_id: int = Field(..., description="Workspace ID", examples=[1])
    plan: str = Field(..., description="Plan name", examples=["team"])
    task_quota_monthly: int = Field(..., description="Tasks included per month", examples=[20000])
    tasks_used_this_month: int = Field(..., description="Tasks used in the current billing month", examples=[13482])
    tasks_remaining: int = Field(..., description="Tasks left this month", examples=[6518])
    percent_used: float = Field(..., description="Share of the quota used, in percent", examples=[67.4])
    by_zap: List[ZapUsage] = Field(..., description="Task history totals per zap")


@app.get(
    "/api/workspaces/{workspace_id}/usage",
    summary="Get workspace task usage",
    description="Show the workspace's monthly task quota, tasks used, and task-history totals per zap.",
    tags=["workspaces"],
    operation_id="get_workspace_usage",
    response_model=WorkspaceUsageResponse,
)
async def get_workspace_usage(workspace_id: int = Path(..., description="Workspace ID", examples=[1])):
    session = SessionLocal()
    w = session.query(Workspace).filter(Workspace.id == workspace_id).first()
    by_zap = []
    for z in session.query(Zap).filter(Zap.workspace_id == w.id).order_by(Zap.id).all():
        runs = session.query(ZapRun).filter(ZapRun.zap_id == z.id).all()
        by_zap.append(ZapUsage(zap_id=z.id, zap_name=z.name, runs=len(runs), tasks_used=sum(r.tasks_used for r in runs)))
    out = WorkspaceUsageResponse(
        workspace_id=w.id, plan=w.plan, task_quota_monthly=w.task_quota_monthly, tasks_used_this_month=w.tasks_used_this_month,
        tasks_remaining=max(0, w.task_quota_monthly - w.tasks_used_this_month),
        percent_used=round(100.0 * w.tasks_used_this_month / w.task_quota_monthly, 1), by_zap=by_zap,
    )
    session.close()
    return out


class MemberResponse(BaseModel):
    id: int = Field(..., description="Membership ID", examples=[3])
    workspace_id: int = Field(..., description="Workspace ID", examples=[1])
    user_id: int = Field(..., description="User ID", examples=[3])
    full_name: str = Field(..., description="Member name", examples=["Marcus Bell"])
    email: str = Field(..., description="Member email", examples=["marcus.bell@acmecorp.com"])
    role: str = Field(..., description="owner, admin or member", examples=["member"])
    joined_at: Optional[str] = Field(None, description="When the user joined (ISO 8601)")
    model_config = ConfigDict(from_attributes=True)


class MemberListResponse(BaseModel):
    members: List[MemberResponse] = Field(..., description="Workspace members")


def _member_out(session, m: WorkspaceMember) -> MemberResponse:
    u = session.query(User).filter(User.id == m.user_id).first()
    return MemberResponse(id=m.id, workspace_id=m.workspace_id, user_id=m.user_id, full_name=u.full_name, email=u.email, role=m.role, joined_at=_dt(m.joined_at))


@app.get(
    "/api/workspaces/{workspace_id}/members",
    summary="List workspace members",
    description="List the members of a workspace with their roles.",
    tags=["workspaces"],
    operation_id="list_workspace_members",
    response_model=MemberListResponse,
)
async def list_workspace_members(
    workspace_id: int = Path(..., description="Workspace ID", examples=[1]),
    role: Optional[Literal["owner", "admin", "member"]] = Query(None, description="Only members with this role", examples=["admin"]),
):
    session = SessionLocal()
    q = session.query(WorkspaceMember).filter(WorkspaceMember.workspace_id == workspace_id)
    if role:
        q = q.filter(WorkspaceMember.role == role)
    out = [_member_out(session, m) for m in q.order_by(WorkspaceMember.id).all()]
    session.close()
    return MemberListResponse(members=out)


class MemberAddRequest(BaseModel):
    email: str = Field(..., description="Email of the person to add; a user account is created if none exists", examples=["liam.oconnor@acmecorp.com"])
    role: Literal["admin", "member"] = Field(..., description="Role in the workspace", examples=["member"])
    full_name: Optional[str] = Field(None, description="Full name, used only when a new user account is created", examples=["Liam O'Connor"])


@app.post(
    "/api/workspaces/{workspace_id}/members",
    summary="Add a workspace member",
    description="Add a user (by email) to a workspace with the admin or member role. Adding an existing member updates nothing and returns the membership.",
    tags=["workspaces"],
    operation_id="add_workspace_member",
    response_model=MemberResponse,
)
async def add_workspace_member(
    workspace_id: int = Path(..., description="Workspace ID", examples=[1]),
    body: MemberAddRequest = Body(...),
):
    session = SessionLocal()
    w = session.query(Workspace).filter(Workspace.id == workspace_id).first()
    u = session.query(User).filter(func.lower(User.email) == body.email.strip().lower()).first()
    if u is None:
        u = User(email=body.email.strip().lower(), full_name=body.full_name or body.email.split("@")[0], timezone="UTC", created_at=_now())
        session.add(u)
        session.flush()
    m = session.query(WorkspaceMember).filter(WorkspaceMember.workspace_id == w.id, WorkspaceMember.user_id == u.id).first()
    if m is None:
        m = WorkspaceMember(workspace_id=w.id, user_id=u.id, role=body.role, joined_at=_now())
        session.add(m)
    session.commit()
    session.refresh(m)
    out = _member_out(session, m)
    session.close()
    return out


class MemberUpdateRequest(BaseModel):
    role: Literal["owner", "admin", "member"] = Field(..., description="New role", examples=["admin"])


@app.patch(
    "/api/members/{member_id}",
    summary="Change a member's role",
    description="Change the role of a workspace membership.",
    tags=["workspaces"],
    operation_id="update_workspace_member",
    response_model=MemberResponse,
)
async def update_workspace_member(
    member_id: int = Path(..., description="Membership ID (from list_workspace_members)", examples=[3]),
    body: MemberUpdateRequest = Body(...),
):
    session = SessionLocal()
    m = session.query(WorkspaceMember).filter(WorkspaceMember.id == member_id).first()
    m.role = body.role
    session.commit()
    session.refresh(m)
    out = _member_out(session, m)
    session.close()
    return out


@app.delete(
    "/api/members/{member_id}",
    summary="Remove a workspace member",
    description="Remove a user from a workspace. Their zaps and connections stay in the workspace.",
    tags=["workspaces"],
    operation_id="remove_workspace_member",
    response_model=DeleteResponse,
)
async def remove_workspace_member(member_id: int = Path(..., description="Membership ID", examples=[6])):
    session = SessionLocal()
    m = session.query(WorkspaceMember).filter(WorkspaceMember.id == member_id).first()
    u = session.query(User).filter(User.id == m.user_id).first()
    name = u.full_name
    session.delete(m)
    session.commit()
    session.close()
    return DeleteResponse(id=member_id, deleted=True, message=f"{name} removed from workspace")


# ---------------------------------------------------------------------------
# Apps and events
# ---------------------------------------------------------------------------

class AppResponse(BaseModel):
    id: int = Field(..., description="App ID", examples=[3])
    key: str = Field(..., description="App key", examples=["slack"])
    name: str = Field(..., description="App name", examples=["Slack"])
    category: str = Field(..., description="App category", examples=["Team Chat"])
    auth_type: str = Field(..., description="oauth2, api_key, basic or none", examples=["oauth2"])
    is_premium: bool = Field(..., description="Requires a paid plan", examples=[False])
    is_builtin: bool = Field(..., description="Built-in Zapline tool that needs no connection", examples=[False])
    description: Optional[str] = Field(None, description="App description")
    model_config = ConfigDict(from_attributes=True)


class AppListResponse(BaseModel):
    apps: List[AppResponse] = Field(..., description="Matching apps")


@app.get(
    "/api/apps",
    summary="List apps",
    description="Browse the app directory by name or category. Use it to find an app ID.",
    tags=["apps"],
    operation_id="list_apps",
    response_model=AppListResponse,
)
async def list_apps(
    search: Optional[str] = Query(None, description="Case-insensitive substring of app name or key", examples=["calendly"]),
    category: Optional[str] = Query(None, description="Exact category name", examples=["CRM"]),
):
    session = SessionLocal()
    q = session.query(App)
    if search:
        like = f"%{search}%"
        q = q.filter(or_(App.name.ilike(like), App.key.ilike(like)))
    if category:
        q = q.filter(App.category == category)
    out = [
        AppResponse(id=a.id, key=a.key, name=a.name, category=a.category, auth_type=a.auth_type, is_premium=bool(a.is_premium), is_builtin=bool(a.is_builtin), description=a.description)
        for a in q.order_by(App.id).all()
    ]
    session.close()
    return AppListResponse(apps=out)


class AppEventResponse(BaseModel):
    id: int = Field(..., description="Event ID", examples=[25])
    app_id: int = Field(..., description="App ID", examples=[10])
    app_name: str = Field(..., description="App name", examples=["Calendly"])
    key: str = Field(..., description="Event key", examples=["invitee_created"])
    name: str = Field(..., description="Event name", examples=["Invitee Created"])
    kind: str = Field(..., description="trigger, action or search", examples=["trigger"])
    is_instant: bool = Field(..., description="Instant (webhook) trigger rather than polling", examples=[True])
    description: Optional[str] = Field(None, description="What the event does")
    model_config = ConfigDict(from_attributes=True)


class AppEventListResponse(BaseModel):
    events: List[AppEventResponse] = Field(..., description="Matching events")


@app.get(
    "/api/app_events",
    summary="List app events",
    description="List the trigger, action and search events an app offers. Filter by app, kind or name.",
    tags=["apps"],
    operation_id="list_app_events",
    response_model=AppEventListResponse,
)
async def list_app_events(
    app_id: Optional[int] = Query(None, description="Only events of this app", examples=[10]),
    kind: Optional[Literal["trigger", "action", "search"]] = Query(None, description="trigger, action or search", examples=["trigger"]),
    search: Optional[str] = Query(None, description="Case-insensitive substring of the event name or key", examples=["invitee"]),
):
    session = SessionLocal()
    q = session.query(AppEvent)
    if app_id is not None:
        q = q.filter(AppEvent.app_id == app_id)
    if kind:
        q = q.filter(AppEvent.kind == kind)
    if search:
        like = f"%{search}%"
        q = q.filter(or_(AppEvent.name.ilike(like), AppEvent.key.ilike(like)))
    out = []
    for e in q.order_by(AppEvent.id).all():
        a = session.query(App).filter(App.id == e.app_id).first()
        out.append(AppEventResponse(id=e.id, app_id=e.app_id, app_name=a.name, key=e.key, name=e.name, kind=e.kind, is_instant=bool(e.is_instant), description=e.description))
    session.close()
    return AppEventListResponse(events=out)


# ---------------------------------------------------------------------------
# Connections
# ---------------------------------------------------------------------------

class ConnectionResponse(BaseModel):
    id: int = Field(..., description="Connection ID", examples=[4])
    workspace_id: int = Field(..., description="Workspace ID", examples=[1])
    app_id: int = Field(..., description="App ID", examples=[3])
    app_name: str = Field(..., description="App name", examples=["Slack"])
    owner_user_id: int = Field(..., description="User who connected the account", examples=[3])
    label: str = Field(..., description="Connection label", examples=["Slack - Sales"])
    account_identifier: str = Field(..., description="Connected account (email, domain or account ID)", examples=["acme-sales.slack.com"])
    status: str = Field(..., description="active, expired, revoked or error", examples=["active"])
    last_verified_at: Optional[str] = Field(None, description="Last successful verification (ISO 8601)")
    zap_count: int = Field(..., description="Number of zaps using this connection", examples=[2])
    created_at: Optional[str] = Field(None, description="Creation time (ISO 8601)")
    model_config = ConfigDict(from_attributes=True)


class ConnectionListResponse(BaseModel):
    connections: List[ConnectionResponse] = Field(..., description="Matching connections")


def _zap_ids_using_connection(session, connection_id: int) -> List[int]:
    ids = {z.id for z in session.query(Zap).filter(Zap.trigger_connection_id == connection_id).all()}
    ids.update(s.zap_id for s in session.query(ZapStep).filter(ZapStep.connection_id == connection_id).all())
    return sorted(ids)


def _connection_out(session, c: Connection) -> ConnectionResponse:
    a = session.query(App).filter(App.id == c.app_id).first()
    return ConnectionResponse(
        id=c.id, workspace_id=c.workspace_id, app_id=c.app_id, app_name=a.name, owner_user_id=c.owner_user_id, label=c.label,
        account_identifier=c.account_identifier, status=c.status, last_verified_at=_dt(c.last_verified_at),
        zap_count=len(_zap_ids_using_connection(session, c.id)), created_at=_dt(c.created_at),
    )


@app.get(
    "/api/connections",
    summary="List connections",
    description="List connected app accounts, filtered by workspace, app, status or label.",
    tags=["connections"],
    operation_id="list_connections",
    response_model=ConnectionListResponse,
)
async def list_connections(
    workspace_id: Optional[int] = Query(None, description="Only connections in this workspace", examples=[1]),
    app_id: Optional[int] = Query(None, description="Only connections to this app", examples=[3]),
    status: Optional[Literal["active", "expired", "revoked", "error"]] = Query(None, description="Only connections with this status", examples=["expired"]),
    label: Optional[str] = Query(None, description="Case-insensitive substring of the label", examples=["Salesforce"]),
):
    session = SessionLocal()
    q = session.query(Connection)
    if workspace_id is not None:
        q = q.filter(Connection.workspace_id == workspace_id)
    if app_id is not None:
        q = q.filter(Connection.app_id == app_id)
    if status:
        q = q.filter(Connection.status == status)
    if label:
        q = q.filter(Connection.label.ilike(f"%{label}%"))
    out = [_connection_out(session, c) for c in q.order_by(Connection.id).all()]
    session.close()
    return ConnectionListResponse(connections=out)


class ConnectionCreateRequest(BaseModel):
    workspace_id: int = Field(..., description="Workspace to add the connection to", examples=[1])
    app_id: int = Field(..., description="App to connect", examples=[3])
    label: str = Field(..., min_length=1, description="Label, unique within the workspace", examples=["Slack - Support Team"])
    account_identifier: str = Field(..., min_length=1, description="Account being connected (email, domain or account ID)", examples=["acme-support.slack.com"])


@app.post(
    "/api/connections",
    summary="Connect an app account",
    description="Create a new authorised connection to an app account in a workspace. The current user becomes its owner.",
    tags=["connections"],
    operation_id="create_connection",
    response_model=ConnectionResponse,
)
async def create_connection(body: ConnectionCreateRequest = Body(...)):
    session = SessionLocal()
    now = _now()
    c = Connection(
        workspace_id=body.workspace_id, app_id=body.app_id, owner_user_id=CURRENT_USER_ID, label=body.label,
        account_identifier=body.account_identifier, status="active", last_verified_at=now, created_at=now,
    )
    session.add(c)
    session.commit()
    session.refresh(c)
    out = _connection_out(session, c)
    session.close()
    return out


class ConnectionUpdateRequest(BaseModel):
    label: Optional[str] = Field(None, min_length=1, description="New label", examples=["Slack - Sales (EMEA)"])
    account_identifier: Optional[str] = Field(None, min_length=1, description="New account identifier", examples=["acme-emea.slack.com"])


@app.patch(
    "/api/connections/{connection_id}",
    summary="Rename a connection",
    description="Change a connection's label or account identifier.",
    tags=["connections"],
    operation_id="update_connection",
    response_model=ConnectionResponse,
)
async def update_connection(
    connection_id: int = Path(..., description="Connection ID", examples=[4]),
    body: ConnectionUpdateRequest = Body(...),
):
    session = SessionLocal()
    c = session.query(Connection).filter(Connection.id == connection_id).first()
    if body.label is not None:
        c.label = body.label
    if body.account_identifier is not None:
        c.account_identifier = body.account_identifier
    session.commit()
    session.refresh(c)
    out = _connection_out(session, c)
    session.close()
    return out


@app.post(
    "/api/connections/{connection_id}/reconnect",
    summary="Reconnect a connection",
    description="Re-authorise an expired, revoked or failing connection. Sets it back to active and records the verification time. Zaps that were turned off are not turned back on automatically.",
    tags=["connections"],
    operation_id="reconnect_connection",
    response_model=ConnectionResponse,
)
async def reconnect_connection(connection_id: int = Path(..., description="Connection ID", examples=[5])):
    session = SessionLocal()
    c = session.query(Connection).filter(Connection.id == connection_id).first()
    c.status = "active"
    c.last_verified_at = _now()
    session.commit()
    session.refresh(c)
    out = _connection_out(session, c)
    session.close()
    return out


@app.delete(
    "/api/connections/{connection_id}",
    summary="Delete a connection",
    description="Remove a connection. Zap steps or triggers that used it are left without a connection, and any of those zaps that were on are marked errored.",
    tags=["connections"],
    operation_id="delete_connection",
    response_model=DeleteResponse,
)
async def delete_connection(connection_id: int = Path(..., description="Connection ID", examples=[15])):
    session = SessionLocal()
    c = session.query(Connection).filter(Connection.id == connection_id).first()
    label = c.label
    now = _now()
    for zid in _zap_ids_using_connection(session, c.id):
        z = session.query(Zap).filter(Zap.id == zid).first()
        if z.status == "on":
            z.status = "errored"
            z.status_reason = f"Connection '{label}' was deleted"
        z.updated_at = now
    for z in session.query(Zap).filter(Zap.trigger_connection_id == c.id).all():
        z.trigger_connection_id = None
    for s in session.query(ZapStep).filter(ZapStep.connection_id == c.id).all():
        s.connection_id = None
    for a in session.query(ErrorAlert).filter(ErrorAlert.connection_id == c.id).all():
        a.connection_id = None
    session.delete(c)
    session.commit()
    session.close()
    return DeleteResponse(id=connection_id, deleted=True, message=f"Connection '{label}' deleted")


# ---------------------------------------------------------------------------
# Zaps
# ---------------------------------------------------------------------------

class FieldMappingResponse(BaseModel):
    id: int = Field(..., description="Mapping ID", examples=[10])
    step_id: int = Field(..., description="Step ID", examples=[4])
    target_field: str = Field(..., description="Field of the step's app event being filled", examples=["channel"])
    source_expression: str = Field(..., description="Static text and/or {{trigger.x}} / {{stepN.x}} references", examples=["#orders"])
    model_config = ConfigDict(from_attributes=True)


class FilterConditionResponse(BaseModel):
    id: int = Field(..., description="Condition ID", examples=[1])
    step_id: int = Field(..., description="Filter step ID", examples=[1])
    group_index: int = Field(..., description="Conditions in the same group are ANDed; groups are ORed", examples=[0])
    field: str = Field(..., description="Field reference being tested", examples=["{{trigger.status}}"])
    operator: str = Field(..., description="Comparison operator", examples=["exactly_matches"])
    value: Optional[str] = Field(None, description="Comparison value", examples=["succeeded"])
    model_config = ConfigDict(from_attributes=True)


class StepResponse(BaseModel):
    id: int = Field(..., description="Step ID", examples=[4])
    zap_id: int = Field(..., description="Zap ID", examples=[2])
    position: int = Field(..., description="1-based position after the trigger", examples=[2])
    step_type: str = Field(..., description="action, search, filter, delay or formatter", examples=["action"])
    title: str = Field(..., description="Step title", examples=["Send Channel Message in Slack"])
    app_event_id: Optional[int] = Field(None, description="App event performed by the step", examples=[9])
    app_name: Optional[str] = Field(None, description="App of the event", examples=["Slack"])
    event_name: Optional[str] = Field(None, description="Event name", examples=["Send Channel Message"])
    connection_id: Optional[int] = Field(None, description="Connection used", examples=[3])
    connection_label: Optional[str] = Field(None, description="Connection label", examples=["Slack - Acme HQ"])
    config: Dict[str, Any] = Field(..., description="Step options", examples=[{"send_as_bot": True}])
    field_mappings: List[FieldMappingResponse] = Field(..., description="Field mappings of the step")
    filter_conditions: List[FilterConditionResponse] = Field(..., description="Conditions (filter steps only)")
    model_config = ConfigDict(from_attributes=True)


class ScheduleResponse(BaseModel):
    id: int = Field(..., description="Schedule ID", examples=[1])
    zap_id: int = Field(..., description="Zap ID", examples=[7])
    frequency: str = Field(..., description="every_15_minutes, hourly, daily, weekly or monthly", examples=["weekly"])
    time_of_day: Optional[str] = Field(None, description="Local time HH:MM", examples=["16:00"])
    day_of_week: Optional[str] = Field(None, description="Weekday for weekly schedules", examples=["friday"])
    day_of_month: Optional[int] = Field(None, description="Day for monthly schedules", examples=[None])
    timezone: str = Field(..., description="IANA timezone", examples=["America/New_York"])
    trigger_on_weekends: bool = Field(..., description="Whether daily/hourly schedules also fire on weekends", examples=[True])
    updated_at: Optional[str] = Field(None, description="Last change (ISO 8601)")
    model_config = ConfigDict(from_attributes=True)


class ZapSummary(BaseModel):
    id: int = Field(..., description="Zap ID", examples=[2])
    workspace_id: int = Field(..., description="Workspace ID", examples=[1])
    name: str = Field(..., description="Zap name", examples=["Shopify Orders to Google Sheets"])
    status: str = Field(..., description="draft, on, off or errored", examples=["on"])
    status_reason: Optional[str] = Field(None, description="Why the zap is errored or could not be turned on")
    owner_user_id: int = Field(..., description="Owner user ID", examples=[2])
    trigger_event_id: Optional[int] = Field(None, description="Trigger app event ID", examples=[23])
    trigger_app_name: Optional[str] = Field(None, description="Trigger app", examples=["Shopify"])
    trigger_event_name: Optional[str] = Field(None, description="Trigger event", examples=["New Order"])
    trigger_connection_id: Optional[int] = Field(None, description="Connection used by the trigger", examples=[8])
    step_count: int = Field(..., description="Number of steps after the trigger", examples=[2])
    last_run_at: Optional[str] = Field(None, description="Last run time (ISO 8601)")
    updated_at: Optional[str] = Field(None, description="Last edit (ISO 8601)")
    model_config = ConfigDict(from_attributes=True)


class ZapListResponse(BaseModel):
    zaps: List[ZapSummary] = Field(..., description="Matching zaps")
    total: int = Field(..., description="Number of zaps returned", examples=[10])


class ZapDetail(ZapSummary):
    description: Optional[str] = Field(None, description="Zap description")
    polling_interval_minutes: int = Field(..., description="Polling interval for non-instant triggers", examples=[15])
    steps: List[StepResponse] = Field(..., description="Steps in order")
    schedule: Optional[ScheduleResponse] = Field(None, description="Schedule (Schedule by Zapline triggers)")
    created_at: Optional[str] = Field(None, description="Creation time (ISO 8601)")


def _schedule_out(s: Optional[Schedule]) -> Optional[ScheduleResponse]:
    if s is None:
        return None
    return ScheduleResponse(
        id=s.id, zap_id=s.zap_id, frequency=s.frequency, time_of_day=s.time_of_day, day_of_week=s.day_of_week,
        day_of_month=s.day_of_month, timezone=s.timezone, trigger_on_weekends=bool(s.trigger_on_weekends), updated_at=_dt(s.updated_at),
    )


def _mapping_out(m: FieldMapping) -> FieldMappingResponse:
    return FieldMappingResponse(id=m.id, step_id=m.step_id, target_field=m.target_field, source_expression=m.source_expression)


def _condition_out(c: FilterCondition) -> FilterConditionResponse:
    return FilterConditionResponse(id=c.id, step_id=c.step_id, group_index=c.group_index, field=c.field, operator=c.operator, value=c.value)


def _step_out(session, s: ZapStep) -> StepResponse:
    app_name = None
    event_name = None
    if s.app_event_id is not None:
        e = session.query(AppEvent).filter(AppEvent.id == s.app_event_id).first()
        if e is not None:
            event_name = e.name
            app_name = session.query(App).filter(App.id == e.app_id).first().name
    label = None
    if s.connection_id is not None:
        c = session.query(Connection).filter(Connection.id == s.connection_id).first()
        label = c.label if c is not None else None
    maps = session.query(FieldMapping).filter(FieldMapping.step_id == s.id).order_by(FieldMapping.id).all()
    conds = session.query(FilterCondition).filter(FilterCondition.step_id == s.id).order_by(FilterCondition.group_index, FilterCondition.id).all()
    return StepResponse(
        id=s.id, zap_id=s.zap_id, position=s.position, step_type=s.step_type, title=s.title, app_event_id=s.app_event_id,
        app_name=app_name, event_name=event_name, connection_id=s.connection_id, connection_label=label,
        config=_load_json(s.config_json) or {}, field_mappings=[_mapping_out(m) for m in maps],
        filter_conditions=[_condition_out(c) for c in conds],
    )


def _zap_summary_fields(session, z: Zap) -> Dict[str, Any]:
    trig_app = None
    trig_event = None
    if z.trigger_event_id is not None:
        e = session.query(AppEvent).filter(AppEvent.id == z.trigger_event_id).first()
        if e is not None:
            trig_event = e.name
            trig_app = session.query(App).filter(App.id == e.app_id).first().name
    count = session.query(ZapStep).filter(ZapStep.zap_id == z.id).count()
    return dict(
        id=z.id, workspace_id=z.workspace_id, name=z.name, status=z.status, status_reason=z.status_reason,
        owner_user_id=z.owner_user_id, trigger_event_id=z.trigger_event_id, trigger_app_name=trig_app,
        trigger_event_name=trig_event, trigger_connection_id=z.trigger_connection_id, step_count=count,
        last_run_at=_dt(z.last_run_at), updated_at=_dt(z.updated_at),
    )


def _zap_detail(session, z: Zap) -> ZapDetail:
    steps = session.query(ZapStep).filter(ZapStep.zap_id == z.id).order_by(ZapStep.position).all()
    sched = session.query(Schedule).filter(Schedule.zap_id == z.id).first()
    return ZapDetail(
        **_zap_summary_fields(session, z), description=z.description, polling_interval_minutes=z.polling_interval_minutes,
        steps=[_step_out(session, s) for s in steps], schedule=_schedule_out(sched), created_at=_dt(z.created_at),
    )


@app.get(
    "/api/zaps",
    summary="List zaps",
    description="List zaps filtered by workspace, name, status, the connection they use (trigger or any step) or their trigger app. Use it to look up a zap ID by name.",
    tags=["zaps"],
    operation_id="list_zaps",
    response_model=ZapListResponse,
)
async def list_zaps(
    workspace_id: Optional[int] = Query(None, description="Only zaps in this workspace", examples=[1]),
    name: Optional[str] = Query(None, description="Case-insensitive substring of the zap name", examples=["Shopify"]),
    status: Optional[ZapStatus] = Query(None, description="draft, on, off or errored", examples=["errored"]),
    connection_id: Optional[int] = Query(None, description="Only zaps whose trigger or any step uses this connection", examples=[5]),
    trigger_app_id: Optional[int] = Query(None, description="Only zaps triggered by this app", examples=[6]),
    owner_user_id: Optional[int] = Query(None, description="Only zaps owned by this user", examples=[1]),
):
    session = SessionLocal()
    q = session.query(Zap)
    if workspace_id is not None:
        q = q.filter(Zap.workspace_id == workspace_id)
    if name:
        q = q.filter(Zap.name.ilike(f"%{name}%"))
    if status:
        q = q.filter(Zap.status == status)
    if connection_id is not None:
        q = q.filter(Zap.id.in_(_zap_ids_using_connection(session, connection_id)))
    if trigger_app_id is not None:
        event_ids = [e.id for e in session.query(AppEvent).filter(AppEvent.app_id == trigger_app_id).all()]
        q = q.filter(Zap.trigger_event_id.in_(event_ids))
    if owner_user_id is not None:
        q = q.filter(Zap.owner_user_id == owner_user_id)
    out = [ZapSummary(**_zap_summary_fields(session, z)) for z in q.order_by(Zap.id).all()]
    session.close()
    return ZapListResponse(zaps=out, total=len(out))


@app.get(
    "/api/zaps/{zap_id}",
    summary="Get a zap",
    description="Get a zap with its trigger, ordered steps (with field mappings and filter conditions) and schedule.",
    tags=["zaps"],
    operation_id="get_zap",
    response_model=ZapDetail,
)
async def get_zap(zap_id: int = Path(..., description="Zap ID", examples=[2])):
    session = SessionLocal()
    z = session.query(Zap).filter(Zap.id == zap_id).first()
    out = _zap_detail(session, z)
    session.close()
    return out


class ZapCreateRequest(BaseModel):
    workspace_id: int = Field(..., description="Workspace to create the zap in", examples=[1])
    name: str = Field(..., min_length=1, description="Zap name, unique within the workspace", examples=["Calendly Bookings to Slack"])
    description: Optional[str] = Field(None, description="What the zap does", examples=["Announces new sales meetings"])
    trigger_event_id: Optional[int] = Field(None, description="Trigger app event ID (kind 'trigger')", examples=[25])
    trigger_connection_id: Optional[int] = Field(None, description="Connection for the trigger app (not needed for built-in apps)", examples=[10])
    polling_interval_minutes: Optional[Literal[1, 2, 5, 15]] = Field(None, description="Polling interval for non-instant triggers (default 15)", examples=[15])


@app.post(
    "/api/zaps",
    summary="Create a zap",
    description="Create a new zap in draft status with an optional trigger. Add steps afterwards and turn it on.",
    tags=["zaps"],
    operation_id="create_zap",
    response_model=ZapDetail,
)
async def create_zap(body: ZapCreateRequest = Body(...)):
    session = SessionLocal()
    now = _now()
    z = Zap(
        workspace_id=body.workspace_id, owner_user_id=CURRENT_USER_ID, name=body.name, description=body.description,
        status="draft", trigger_event_id=body.trigger_event_id, trigger_connection_id=body.trigger_connection_id,
        polling_interval_minutes=body.polling_interval_minutes or 15, created_at=now, updated_at=now,
    )
    session.add(z)
    session.commit()
    session.refresh(z)
    out = _zap_detail(session, z)
    session.close()
    return out


class ZapUpdateRequest(BaseModel):
    name: Optional[str] = Field(None, min_length=1, description="New name", examples=["Shopify Orders to Sheets and Slack"])
    description: Optional[str] = Field(None, description="New description")
    trigger_event_id: Optional[int] = Field(None, description="New trigger event ID", examples=[23])
    trigger_connection_id: Optional[int] = Field(None, description="New trigger connection ID", examples=[8])
    polling_interval_minutes: Optional[Literal[1, 2, 5, 15]] = Field(None, description="New polling interval", examples=[5])
    owner_user_id: Optional[int] = Field(None, description="Transfer ownership to this user", examples=[2])


@app.patch(
    "/api/zaps/{zap_id}",
    summary="Update a zap",
    description="Rename a zap, change its description, trigger, trigger connection, polling interval or owner. Use turn_on_zap / turn_off_zap to change its status.",
    tags=["zaps"],
    operation_id="update_zap",
    response_model=ZapDetail,
)
async def update_zap(
    zap_id: int = Path(..., description="Zap ID", examples=[2]),
    body: ZapUpdateRequest = Body(...),
):
    session = SessionLocal()
    z = session.query(Zap).filter(Zap.id == zap_id).first()
    data = body.model_dump(exclude_unset=True)
    for key, value in data.items():
        if value is None and key in ("name", "polling_interval_minutes", "owner_user_id"):
            continue
        setattr(z, key, value)
    z.updated_at = _now()
    session.commit()
    session.refresh(z)
    out = _zap_detail(session, z)
    session.close()
    return out


@app.delete(
    "/api/zaps/{zap_id}",
    summary="Delete a zap",
    description="Permanently delete a zap with its steps, mappings, filters, schedule, task history and alerts.",
    tags=["zaps"],
    operation_id="delete_zap",
    response_model=DeleteResponse,
)
async def delete_zap(zap_id: int = Path(..., description="Zap ID", examples=[13])):
    session = SessionLocal()
    z = session.query(Zap).filter(Zap.id == zap_id).first()
    name = z.name
    step_ids = [s.id for s in session.query(ZapStep).filter(ZapStep.zap_id == z.id).all()]
    run_ids = [r.id for r in session.query(ZapRun).filter(ZapRun.zap_id == z.id).all()]
    if step_ids:
        session.query(FieldMapping).filter(FieldMapping.step_id.in_(step_ids)).delete(synchronize_session=False)
        session.query(FilterCondition).filter(FilterCondition.step_id.in_(step_ids)).delete(synchronize_session=False)
    if run_ids:
        session.query(RunAttempt).filter(RunAttempt.run_id.in_(run_ids)).delete(synchronize_session=False)
    session.query(ErrorAlert).filter(ErrorAlert.zap_id == z.id).delete(synchronize_session=False)
    session.query(ZapRun).filter(ZapRun.zap_id == z.id).delete(synchronize_session=False)
    session.query(ZapStep).filter(ZapStep.zap_id == z.id).delete(synchronize_session=False)
    session.query(Schedule).filter(Schedule.zap_id == z.id).delete(synchronize_session=False)
    session.delete(z)
    session.commit()
    session.close()
    return DeleteResponse(id=zap_id, deleted=True, message=f"Zap '{name}' deleted")


def _zap_problems(session, z: Zap) -> Dict[str, Optional[str]]:
    """Returns {'incomplete': reason|None, 'connection': reason|None}."""
    incomplete = None
    broken = None
    if z.trigger_event_id is None:
        incomplete = "Zap has no trigger event"
    else:
        e = session.query(AppEvent).filter(AppEvent.id == z.trigger_event_id).first()
        a = session.query(App).filter(App.id == e.app_id).first()
        if not a.is_builtin and z.trigger_connection_id is None:
            incomplete = f"Trigger '{e.name}' in {a.name} needs a connection"
    steps = session.query(ZapStep).filter(ZapStep.zap_id == z.id).order_by(ZapStep.position).all()
    if incomplete is None and not any(s.step_type in ("action", "search") for s in steps):
        incomplete = "Zap needs at least one action step"
    conn_ids = [z.trigger_connection_id] + [s.connection_id for s in steps]
    for s in steps:
        if incomplete is None and s.step_type in ("action", "search") and (s.app_event_id is None or s.connection_id is None):
            incomplete = f"Step {s.position} '{s.title}' needs an app event and a connection"
    for cid in conn_ids:
        if cid is None or broken is not None:
            continue
        c = session.query(Connection).filter(Connection.id == cid).first()
        if c is not None and c.status != "active":
            broken = f"Connection '{c.label}' is {c.status}; reconnect it to turn this zap on"
    return {"incomplete": incomplete, "connection": broken}


@app.post(
    "/api/zaps/{zap_id}/on",
    summary="Turn a zap on",
    description="Turn a zap on. The zap must have a trigger, at least one configured action step, and only active connections; otherwise it stays off (or becomes errored for broken connections) and status_reason explains why.",
    tags=["zaps"],
    operation_id="turn_on_zap",
    response_model=ZapDetail,
)
async def turn_on_zap(zap_id: int = Path(..., description="Zap ID", examples=[4])):
    session = SessionLocal()
    z = session.query(Zap).filter(Zap.id == zap_id).first()
    problems = _zap_problems(session, z)
    if problems["incomplete"] is not None:
        z.status_reason = "Cannot turn on: " + problems["incomplete"]
    elif problems["connection"] is not None:
        z.status = "errored"
        z.status_reason = problems["connection"]
    else:
        z.status = "on"
        z.status_reason = None
    z.updated_at = _now()
    session.commit()
    session.refresh(z)
    out = _zap_detail(session, z)
    session.close()
    return out


@app.post(
    "/api/zaps/{zap_id}/off",
    summary="Turn a zap off",
    description="Turn a zap off so its trigger stops running. Task history is kept.",
    tags=["zaps"],
    operation_id="turn_off_zap",
    response_model=ZapDetail,
)
async def turn_off_zap(zap_id: int = Path(..., description="Zap ID", examples=[11])):
    session = SessionLocal()
    z = session.query(Zap).filter(Zap.id == zap_id).first()
    if z.status != "draft":
        z.status = "off"
        z.status_reason = None
    z.updated_at = _now()
    session.commit()
    session.refresh(z)
    out = _zap_detail(session, z)
    session.close()
    return out


# ---------------------------------------------------------------------------
# Steps, field mappings and filters
# ---------------------------------------------------------------------------

class StepListResponse(BaseModel):
    zap_id: int = Field(..., description="Zap ID", examples=[2])
    steps: List[StepResponse] = Field(..., description="Steps in order")


@app.get(
    "/api/zaps/{zap_id}/steps",
    summary="List zap steps",
    description="List a zap's steps in order with their app events, connections, field mappings and filter conditions.",
    tags=["steps"],
    operation_id="list_zap_steps",
    response_model=StepListResponse,
)
async def list_zap_steps(zap_id: int = Path(..., description="Zap ID", examples=[2])):
    session = SessionLocal()
    steps = session.query(ZapStep).filter(ZapStep.zap_id == zap_id).order_by(ZapStep.position).all()
    out = [_step_out(session, s) for s in steps]
    session.close()
    return StepListResponse(zap_id=zap_id, steps=out)


def _renumber(session, steps: List[ZapStep]) -> None:
    # two-phase renumbering keeps UNIQUE(zap_id, position) satisfied
    for s in steps:
        s.position = s.position + 1000
    session.flush()
    for idx, s in enumerate(steps):
        s.position = idx + 1
    session.flush()


class StepCreateRequest(BaseModel):
    step_type: StepType = Field(..., description="action, search, filter, delay or formatter", examples=["action"])
    app_event_id: Optional[int] = Field(None, description="App event to perform (required for action and search steps)", examples=[9])
    connection_id: Optional[int] = Field(None, description="Connection for the event's app (required for action and search steps)", examples=[4])
    title: Optional[str] = Field(None, description="Step title; defaults to '<Event> in <App>' or a generic filter/delay title", examples=["Send Channel Message in Slack"])
    position: Optional[int] = Field(None, ge=1, description="1-based position to insert at (later steps shift down); omit to append", examples=[1])
    config: Optional[Dict[str, Any]] = Field(None, description="Step options, e.g. {\"delay_for\": 5, \"unit\": \"minutes\"} for delays", examples=[{"send_as_bot": True}])


@app.post(
    "/api/zaps/{zap_id}/steps",
    summary="Add a step to a zap",
    description="Insert an action, search, filter, delay or formatter step. Configure action fields with set_field_mapping and filter rules with add_filter_condition.",
    tags=["steps"],
    operation_id="add_zap_step",
    response_model=StepResponse,
)
async def add_zap_step(
    zap_id: int = Path(..., description="Zap ID", examples=[14]),
    body: StepCreateRequest = Body(...),
):
    session = SessionLocal()
    z = session.query(Zap).filter(Zap.id == zap_id).first()
    existing = session.query(ZapStep).filter(ZapStep.zap_id == z.id).order_by(ZapStep.position).all()
    title = body.title
    if not title:
        if body.app_event_id is not None:
            e = session.query(AppEvent).filter(AppEvent.id == body.app_event_id).first()
            a = session.query(App).filter(App.id == e.app_id).first()
            title = f"{e.name} in {a.name}"
        elif body.step_type == "filter":
            title = "Only continue if..."
        elif body.step_type == "delay":
            title = "Delay For"
        else:
            title = "Formatter"
    now = _now()
    step = ZapStep(
        zap_id=z.id, position=len(existing) + 1001, step_type=body.step_type, app_event_id=body.app_event_id,
        connection_id=body.connection_id, title=title, config_json=json.dumps(body.config or {}), created_at=now, updated_at=now,
    )
    session.add(step)
    session.flush()
    index = len(existing)
    if body.position is not None and body.position <= len(existing):
        index = body.position - 1
    _renumber(session, existing[:index] + [step] + existing[index:])
    z.updated_at = now
    session.commit()
    session.refresh(step)
    out = _step_out(session, step)
    session.close()
    return out


class StepUpdateRequest(BaseModel):
    title: Optional[str] = Field(None, min_length=1, description="New title", examples=["Post order to #orders"])
    app_event_id: Optional[int] = Field(None, description="New app event", examples=[10])
    connection_id: Optional[int] = Field(None, description="New connection", examples=[4])
    config: Optional[Dict[str, Any]] = Field(None, description="Replace the step options", examples=[{"send_as_bot": False}])


@app.patch(
    "/api/steps/{step_id}",
    summary="Update a zap step",
    description="Change a step's title, app event, connection or options.",
    tags=["steps"],
    operation_id="update_zap_step",
    response_model=StepResponse,
)
async def update_zap_step(
    step_id: int = Path(..., description="Step ID", examples=[4]),
    body: StepUpdateRequest = Body(...),
):
    session = SessionLocal()
    s = session.query(ZapStep).filter(ZapStep.id == step_id).first()
    if body.title is not None:
        s.title = body.title
    if body.app_event_id is not None:
        s.app_event_id = body.app_event_id
    if body.connection_id is not None:
        s.connection_id = body.connection_id
    if body.config is not None:
        s.config_json = json.dumps(body.config)
    now = _now()
    s.updated_at = now
    z = session.query(Zap).filter(Zap.id == s.zap_id).first()
    z.updated_at = now
    session.commit()
    session.refresh(s)
    out = _step_out(session, s)
    session.close()
    return out


@app.delete(
    "/api/steps/{step_id}",
    summary="Delete a zap step",
    description="Remove a step (with its mappings and filter conditions); later steps move up.",
    tags=["steps"],
    operation_id="delete_zap_step",
    response_model=DeleteResponse,
)
async def delete_zap_step(step_id: int = Path(..., description="Step ID", examples=[4])):
    session = SessionLocal()
    s = session.query(ZapStep).filter(ZapStep.id == step_id).first()
    zap_id = s.zap_id
    title = s.title
    session.query(FieldMapping).filter(FieldMapping.step_id == s.id).delete(synchronize_session=False)
    session.query(FilterCondition).filter(FilterCondition.step_id == s.id).delete(synchronize_session=False)
    session.delete(s)
    session.flush()
    _renumber(session, session.query(ZapStep).filter(ZapStep.zap_id == zap_id).order_by(ZapStep.position).all())
    z = session.query(Zap).filter(Zap.id == zap_id).first()
    z.updated_at = _now()
    session.commit()
    session.close()
    return DeleteResponse(id=step_id, deleted=True, message=f"Step '{title}' deleted")


class FieldMappingListResponse(BaseModel):
    step_id: int = Field(..., description="Step ID", examples=[4])
    mappings: List[FieldMappingResponse] = Field(..., description="Field mappings")


@app.get(
    "/api/steps/{step_id}/mappings",
    summary="List field mappings",
    description="List how a step's fields are filled from trigger data, earlier steps or static text.",
    tags=["mappings"],
    operation_id="list_field_mappings",
    response_model=FieldMappingListResponse,
)
async def list_field_mappings(step_id: int = Path(..., description="Step ID", examples=[4])):
    session = SessionLocal()
    out = [_mapping_out(m) for m in session.query(FieldMapping).filter(FieldMapping.step_id == step_id).order_by(FieldMapping.id).all()]
    session.close()
    return FieldMappingListResponse(step_id=step_id, mappings=out)


class FieldMappingSetRequest(BaseModel):
    target_field: str = Field(..., min_length=1, description="Field of the step's app event, e.g. channel, text, to, subject, email", examples=["channel"])
    source_expression: str = Field(..., description="Static text and/or references such as {{trigger.email}} or {{step1.id}}", examples=["#sales-meetings"])


@app.put(
    "/api/steps/{step_id}/mappings",
    summary="Set a field mapping",
    description="Create or replace the mapping for one field of a step (upsert by target_field).",
    tags=["mappings"],
    operation_id="set_field_mapping",
    response_model=FieldMappingResponse,
)
async def set_field_mapping(
    step_id: int = Path(..., description="Step ID", examples=[20]),
    body: FieldMappingSetRequest = Body(...),
):
    session = SessionLocal()
    s = session.query(ZapStep).filter(ZapStep.id == step_id).first()
    now = _now()
    m = session.query(FieldMapping).filter(FieldMapping.step_id == s.id, FieldMapping.target_field == body.target_field).first()
    if m is None:
        m = FieldMapping(step_id=s.id, target_field=body.target_field, source_expression=body.source_expression, created_at=now, updated_at=now)
        session.add(m)
    else:
        m.source_expression = body.source_expression
        m.updated_at = now
    z = session.query(Zap).filter(Zap.id == s.zap_id).first()
    z.updated_at = now
    session.commit()
    session.refresh(m)
    out = _mapping_out(m)
    session.close()
    return out


@app.delete(
    "/api/mappings/{mapping_id}",
    summary="Delete a field mapping",
    description="Clear one field mapping of a step.",
    tags=["mappings"],
    operation_id="delete_field_mapping",
    response_model=DeleteResponse,
)
async def delete_field_mapping(mapping_id: int = Path(..., description="Mapping ID", examples=[10])):
    session = SessionLocal()
    m = session.query(FieldMapping).filter(FieldMapping.id == mapping_id).first()
    field = m.target_field
    session.delete(m)
    session.commit()
    session.close()
    return DeleteResponse(id=mapping_id, deleted=True, message=f"Mapping for '{field}' deleted")


class FilterConditionListResponse(BaseModel):
    step_id: int = Field(..., description="Filter step ID", examples=[1])
    conditions: List[FilterConditionResponse] = Field(..., description="Conditions")


@app.get(
    "/api/steps/{step_id}/conditions",
    summary="List filter conditions",
    description="List the conditions of a filter step.",
    tags=["filters"],
    operation_id="list_filter_conditions",
    response_model=FilterConditionListResponse,
)
async def list_filter_conditions(step_id: int = Path(..., description="Filter step ID", examples=[1])):
    session = SessionLocal()
    rows = session.query(FilterCondition).filter(FilterCondition.step_id == step_id).order_by(FilterCondition.group_index, FilterCondition.id).all()
    out = [_condition_out(c) for c in rows]
    session.close()
    return FilterConditionListResponse(step_id=step_id, conditions=out)


class FilterConditionCreateRequest(BaseModel):
    field: str = Field(..., min_length=1, description="Field reference to test, e.g. {{trigger.subject}}", examples=["{{trigger.subject}}"])
    operator: FilterOperator = Field(..., description="text_contains, text_does_not_contain, exactly_matches, does_not_exactly_match, starts_with, ends_with, greater_than, less_than, exists, does_not_exist, is_true or is_false", examples=["text_contains"])
    value: Optional[str] = Field(None, description="Value to compare with (omit for exists/is_true style operators)", examples=["Invoice"])
    group_index: Optional[int] = Field(None, ge=0, description="OR-group; conditions sharing a group are ANDed (default 0)", examples=[0])


@app.post(
    "/api/steps/{step_id}/conditions",
    summary="Add a filter condition",
    description="Add a rule to a filter step. The zap only continues past the filter when the rules match.",
    tags=["filters"],
    operation_id="add_filter_condition",
    response_model=FilterConditionResponse,
)
async def add_filter_condition(
    step_id: int = Path(..., description="Filter step ID", examples=[20]),
    body: FilterConditionCreateRequest = Body(...),
):
    session = SessionLocal()
    s = session.query(ZapStep).filter(ZapStep.id == step_id).first()
    c = FilterCondition(step_id=s.id, group_index=body.group_index or 0, field=body.field, operator=body.operator, value=body.value, created_at=_now())
    session.add(c)
    z = session.query(Zap).filter(Zap.id == s.zap_id).first()
    z.updated_at = _now()
    session.commit()
    session.refresh(c)
    out = _condition_out(c)
    session.close()
    return out


@app.delete(
    "/api/conditions/{condition_id}",
    summary="Delete a filter condition",
    description="Remove one rule from a filter step.",
    tags=["filters"],
    operation_id="delete_filter_condition",
    response_model=DeleteResponse,
)
async def delete_filter_condition(condition_id: int = Path(..., description="Condition ID", examples=[2])):
    session = SessionLocal()
    c = session.query(FilterCondition).filter(FilterCondition.id == condition_id).first()
    session.delete(c)
    session.commit()
    session.close()
    return DeleteResponse(id=condition_id, deleted=True, message=f"Condition {condition_id} deleted")


# ---------------------------------------------------------------------------
# Schedules
# ---------------------------------------------------------------------------

class ZapScheduleResponse(BaseModel):
    zap_id: int = Field(..., description="Zap ID", examples=[7])
    schedule: Optional[ScheduleResponse] = Field(None, description="The schedule, or null if the zap has none")


@app.get(
    "/api/zaps/{zap_id}/schedule",
    summary="Get a zap's schedule",
    description="Get when a schedule-triggered zap runs.",
    tags=["schedules"],
    operation_id="get_zap_schedule",
    response_model=ZapScheduleResponse,
)
async def get_zap_schedule(zap_id: int = Path(..., description="Zap ID", examples=[7])):
    session = SessionLocal()
    s = session.query(Schedule).filter(Schedule.zap_id == zap_id).first()
    out = ZapScheduleResponse(zap_id=zap_id, schedule=_schedule_out(s))
    session.close()
    return out


class ScheduleSetRequest(BaseModel):
    frequency: Literal["every_15_minutes", "hourly", "daily", "weekly", "monthly"] = Field(..., description="How often the zap runs", examples=["weekly"])
    time_of_day: Optional[str] = Field(None, pattern=r"^([01][0-9]|2[0-3]):[0-5][0-9]$", description="Local time HH:MM (24h) for daily, weekly and monthly schedules", examples=["08:30"])
    day_of_week: Optional[Weekday] = Field(None, description="Lowercase weekday for weekly schedules", examples=["monday"])
    day_of_month: Optional[int] = Field(None, ge=1, le=31, description="Day of month for monthly schedules", examples=[1])
    timezone: Optional[str] = Field(None, description="IANA timezone (default UTC)", examples=["Europe/London"])
    trigger_on_weekends: Optional[bool] = Field(None, description="Whether daily/hourly schedules fire on weekends (default true)", examples=[False])

    @field_validator("day_of_week", mode="before")
    @classmethod
    def _lower_day(cls, v):
        return v.strip().lower() if isinstance(v, str) else v

    @field_validator("time_of_day", mode="before")
    @classmethod
    def _pad_time(cls, v):
        if isinstance(v, str) and len(v.strip()) == 4 and v.strip()[1] == ":":
            return "0" + v.strip()
        return v


@app.put(
    "/api/zaps/{zap_id}/schedule",
    summary="Set a zap's schedule",
    description="Create or replace the schedule of a schedule-triggered zap. Fields not relevant to the frequency are cleared.",
    tags=["schedules"],
    operation_id="set_zap_schedule",
    response_model=ZapScheduleResponse,
)
async def set_zap_schedule(
    zap_id: int = Path(..., description="Zap ID", examples=[7]),
    body: ScheduleSetRequest = Body(...),
):
    session = SessionLocal()
    z = session.query(Zap).filter(Zap.id == zap_id).first()
    s = session.query(Schedule).filter(Schedule.zap_id == z.id).first()
    if s is None:
        s = Schedule(zap_id=z.id)
        session.add(s)
    s.frequency = body.frequency
    s.time_of_day = body.time_of_day if body.frequency in ("daily", "weekly", "monthly") else None
    s.day_of_week = body.day_of_week if body.frequency == "weekly" else None
    s.day_of_month = body.day_of_month if body.frequency == "monthly" else None
    s.timezone = body.timezone or "UTC"
    s.trigger_on_weekends = True if body.trigger_on_weekends is None else body.trigger_on_weekends
    now = _now()
    s.updated_at = now
    z.updated_at = now
    session.commit()
    session.refresh(s)
    out = ZapScheduleResponse(zap_id=z.id, schedule=_schedule_out(s))
    session.close()
    return out


# ---------------------------------------------------------------------------
# Task history (runs) and attempts
# ---------------------------------------------------------------------------

class RunAttemptResponse(BaseModel):
    id: int = Field(..., description="Attempt ID", examples=[18])
    step_id: Optional[int] = Field(None, description="Step ID; null for the trigger", examples=[4])
    step_position: int = Field(..., description="0 for the trigger, otherwise the step position", examples=[2])
    step_title: Optional[str] = Field(None, description="Trigger or step title", examples=["Send Channel Message in Slack"])
    attempt_number: int = Field(..., description="Attempt number", examples=[1])
    status: str = Field(..., description="success, error, filtered, halted or skipped", examples=["error"])
    http_status: Optional[int] = Field(None, description="HTTP status returned by the app", examples=[404])
    duration_ms: Optional[int] = Field(None, description="Duration in milliseconds", examples=[342])
    response_summary: Optional[str] = Field(None, description="Summary of the app response")
    error_message: Optional[str] = Field(None, description="Error returned by the app")
    created_at: Optional[str] = Field(None, description="Attempt time (ISO 8601)")
    model_config = ConfigDict(from_attributes=True)


class RunSummary(BaseModel):
    id: int = Field(..., description="Run ID", examples=[13])
    zap_id: int = Field(..., description="Zap ID", examples=[2])
    zap_name: str = Field(..., description="Zap name", examples=["Shopify Orders to Google Sheets"])
    status: str = Field(..., description="success, filtered, error, halted, held or playing", examples=["error"])
    trigger_summary: Optional[str] = Field(None, description="What triggered the run", examples=["Order #1866 - $318.25"])
    tasks_used: int = Field(..., description="Tasks billed for the run", examples=[1])
    error_message: Optional[str] = Field(None, description="Run error")
    replayed_from_run_id: Optional[int] = Field(None, description="Original run when this run is a replay", examples=[None])
    started_at: Optional[str] = Field(None, description="Start time (ISO 8601)")
    finished_at: Optional[str] = Field(None, description="Finish time (ISO 8601)")
    model_config = ConfigDict(from_attributes=True)


class RunListResponse(BaseModel):
    runs: List[RunSummary] = Field(..., description="Runs, newest first")
    total: int = Field(..., description="Number of runs returned", examples=[5])


class RunDetail(RunSummary):
    trigger_data: Optional[Any] = Field(None, description="Trigger payload")
    attempts: List[RunAttemptResponse] = Field(..., description="Per-step attempts in order")


def _run_summary_fields(session, r: ZapRun) -> Dict[str, Any]:
    z = session.query(Zap).filter(Zap.id == r.zap_id).first()
    return dict(
        id=r.id, zap_id=r.zap_id, zap_name=z.name, status=r.status, trigger_summary=r.trigger_summary, tasks_used=r.tasks_used,
        error_message=r.error_message, replayed_from_run_id=r.replayed_from_run_id, started_at=_dt(r.started_at), finished_at=_dt(r.finished_at),
    )


def _run_detail(session, r: ZapRun) -> RunDetail:
    z = session.query(Zap).filter(Zap.id == r.zap_id).first()
    trigger_title = None
    if z.trigger_event_id is not None:
        e = session.query(AppEvent).filter(AppEvent.id == z.trigger_event_id).first()
        a = session.query(App).filter(App.id == e.app_id).first()
        trigger_title = f"{e.name} in {a.name}"
    attempts = []
    for x in session.query(RunAttempt).filter(RunAttempt.run_id == r.id).order_by(RunAttempt.step_position, RunAttempt.id).all():
        title = trigger_title
        if x.step_id is not None:
            s = session.query(ZapStep).filter(ZapStep.id == x.step_id).first()
            title = s.title if s is not None else None
        attempts.append(RunAttemptResponse(
            id=x.id, step_id=x.step_id, step_position=x.step_position, step_title=title, attempt_number=x.attempt_number,
            status=x.status, http_status=x.http_status, duration_ms=x.duration_ms, response_summary=x.response_summary,
            error_message=x.error_message, created_at=_dt(x.created_at),
        ))
    return RunDetail(**_run_summary_fields(session, r), trigger_data=_load_json(r.trigger_data_json), attempts=attempts)


@app.get(
    "/api/runs",
    summary="List task history",
    description="List zap runs (task history) newest first, filtered by zap, workspace or status.",
    tags=["runs"],
    operation_id="list_zap_runs",
    response_model=RunListResponse,
)
async def list_zap_runs(
    zap_id: Optional[int] = Query(None, description="Only runs of this zap", examples=[2]),
    workspace_id: Optional[int] = Query(None, description="Only runs of zaps in this workspace", examples=[1]),
    status: Optional[RunStatus] = Query(None, description="success, filtered, error, halted, held or playing", examples=["error"]),
    limit: int = Query(50, ge=1, le=200, description="Maximum number of runs", examples=[20]),
):
    session = SessionLocal()
    q = session.query(ZapRun)
    if zap_id is not None:
        q = q.filter(ZapRun.zap_id == zap_id)
    if workspace_id is not None:
        zap_ids = [z.id for z in session.query(Zap).filter(Zap.workspace_id == workspace_id).all()]
        q = q.filter(ZapRun.zap_id.in_(zap_ids))
    if status:
        q = q.filter(ZapRun.status == status)
    runs = q.order_by(ZapRun.started_at.desc(), ZapRun.id.desc()).limit(limit).all()
    out = [RunSummary(**_run_summary_fields(session, r)) for r in runs]
    session.close()
    return RunListResponse(runs=out, total=len(out))


@app.get(
    "/api/runs/{run_id}",
    summary="Get a run",
    description="Get one run from the task history with its trigger data and per-step attempts (HTTP status, errors).",
    tags=["runs"],
    operation_id="get_zap_run",
    response_model=RunDetail,
)
async def get_zap_run(run_id: int = Path(..., description="Run ID", examples=[13])):
    session = SessionLocal()
    r = session.query(ZapRun).filter(ZapRun.id == run_id).first()
    out = _run_detail(session, r)
    session.close()
    return out


@app.post(
    "/api/runs/{run_id}/replay",
    summary="Replay a run",
    description="Re-run a zap run with the same trigger data using the zap's current steps and connections. A new run linked by replayed_from_run_id is recorded; it errors if a connection used by the zap is not active.",
    tags=["runs"],
    operation_id="replay_zap_run",
    response_model=RunDetail,
)
async def replay_zap_run(run_id: int = Path(..., description="ID of the run to replay", examples=[19])):
    session = SessionLocal()
    original = session.query(ZapRun).filter(ZapRun.id == run_id).first()
    z = session.query(Zap).filter(Zap.id == original.zap_id).first()
    w = session.query(Workspace).filter(Workspace.id == z.workspace_id).first()
    steps = session.query(ZapStep).filter(ZapStep.zap_id == z.id).order_by(ZapStep.position).all()
    now = _now()
    run = ZapRun(
        zap_id=z.id, status="success", trigger_summary=original.trigger_summary, trigger_data_json=original.trigger_data_json,
        tasks_used=0, replayed_from_run_id=original.id, started_at=now, finished_at=now,
    )
    session.add(run)
    session.flush()
    broken = None
    if z.trigger_connection_id is not None:
        c = session.query(Connection).filter(Connection.id == z.trigger_connection_id).first()
        if c is not None and c.status != "active":
            broken = (None, 0, c)
    session.add(RunAttempt(
        run_id=run.id, step_id=None, step_position=0, attempt_number=1, status="error" if broken else "success",
        http_status=401 if broken else 200, duration_ms=0, response_summary=None if broken else "Replayed trigger data",
        error_message=f"Connection '{broken[2].label}' is {broken[2].status}" if broken else None, created_at=now,
    ))
    for s in steps:
        if broken is not None:
            session.add(RunAttempt(run_id=run.id, step_id=s.id, step_position=s.position, attempt_number=1, status="skipped", created_at=now))
            continue
        c = session.query(Connection).filter(Connection.id == s.connection_id).first() if s.connection_id is not None else None
        if c is not None and c.status != "active":
            broken = (s.id, s.position, c)
            session.add(RunAttempt(
                run_id=run.id, step_id=s.id, step_position=s.position, attempt_number=1, status="error", http_status=401,
                duration_ms=0, error_message=f"Connection '{c.label}' is {c.status}", created_at=now,
            ))
            continue
        session.add(RunAttempt(
            run_id=run.id, step_id=s.id, step_position=s.position, attempt_number=1, status="success",
            http_status=200 if s.step_type in ("action", "search") else None, duration_ms=0, response_summary="Replayed successfully", created_at=now,
        ))
        if s.step_type in ("action", "search"):
            run.tasks_used = run.tasks_used + 1
    if broken is not None:
        run.status = "error"
        run.error_message = f"Connection '{broken[2].label}' is {broken[2].status}; reconnect it and replay again"
        run.tasks_used = 0
    w.tasks_used_this_month = w.tasks_used_this_month + run.tasks_used
    z.last_run_at = now
    session.commit()
    session.refresh(run)
    out = _run_detail(session, run)
    session.close()
    return out


# ---------------------------------------------------------------------------
# Error alerts
# ---------------------------------------------------------------------------

class AlertResponse(BaseModel):
    id: int = Field(..., description="Alert ID", examples=[1])
    workspace_id: int = Field(..., description="Workspace ID", examples=[1])
    zap_id: Optional[int] = Field(None, description="Zap the alert is about", examples=[1])
    zap_name: Optional[str] = Field(None, description="Zap name", examples=["Stripe Payments to QuickBooks"])
    connection_id: Optional[int] = Field(None, description="Connection involved", examples=[7])
    run_id: Optional[int] = Field(None, description="Run that raised the alert", examples=[5])
    alert_type: str = Field(..., description="zap_error, connection_expired or task_limit", examples=["zap_error"])
    severity: str = Field(..., description="info, warning, error or critical", examples=["error"])
    message: str = Field(..., description="Alert text")
    status: str = Field(..., description="open, acknowledged or resolved", examples=["open"])
    created_at: Optional[str] = Field(None, description="Raised at (ISO 8601)")
    resolved_at: Optional[str] = Field(None, description="Resolved at (ISO 8601)")
    resolved_by_user_id: Optional[int] = Field(None, description="User who resolved it", examples=[1])
    model_config = ConfigDict(from_attributes=True)


class AlertListResponse(BaseModel):
    alerts: List[AlertResponse] = Field(..., description="Matching alerts, newest first")


def _alert_out(session, a: ErrorAlert) -> AlertResponse:
    zap_name = None
    if a.zap_id is not None:
        z = session.query(Zap).filter(Zap.id == a.zap_id).first()
        zap_name = z.name if z is not None else None
    return AlertResponse(
        id=a.id, workspace_id=a.workspace_id, zap_id=a.zap_id, zap_name=zap_name, connection_id=a.connection_id, run_id=a.run_id,
        alert_type=a.alert_type, severity=a.severity, message=a.message, status=a.status, created_at=_dt(a.created_at),
        resolved_at=_dt(a.resolved_at), resolved_by_user_id=a.resolved_by_user_id,
    )


@app.get(
    "/api/alerts",
    summary="List error alerts",
    description="List error alerts raised by failing zaps, expired connections or task limits.",
    tags=["alerts"],
    operation_id="list_error_alerts",
    response_model=AlertListResponse,
)
async def list_error_alerts(
    workspace_id: Optional[int] = Query(None, description="Only alerts in this workspace", examples=[1]),
    zap_id: Optional[int] = Query(None, description="Only alerts about this zap", examples=[1]),
    status: Optional[Literal["open", "acknowledged", "resolved"]] = Query(None, description="open, acknowledged or resolved", examples=["open"]),
    alert_type: Optional[Literal["zap_error", "connection_expired", "task_limit"]] = Query(None, description="Alert type", examples=["zap_error"]),
):
    session = SessionLocal()
    q = session.query(ErrorAlert)
    if workspace_id is not None:
        q = q.filter(ErrorAlert.workspace_id == workspace_id)
    if zap_id is not None:
        q = q.filter(ErrorAlert.zap_id == zap_id)
    if status:
        q = q.filter(ErrorAlert.status == status)
    if alert_type:
        q = q.filter(ErrorAlert.alert_type == alert_type)
    out = [_alert_out(session, a) for a in q.order_by(ErrorAlert.created_at.desc(), ErrorAlert.id.desc()).all()]
    session.close()
    return AlertListResponse(alerts=out)


class AlertUpdateRequest(BaseModel):
    status: Literal["open", "acknowledged", "resolved"] = Field(..., description="New alert status", examples=["resolved"])


@app.patch(
    "/api/alerts/{alert_id}",
    summary="Acknowledge or resolve an alert",
    description="Set an alert to acknowledged or resolved (recording who resolved it and when), or reopen it.",
    tags=["alerts"],
    operation_id="update_error_alert",
    response_model=AlertResponse,
)
async def update_error_alert(
    alert_id: int = Path(..., description="Alert ID", examples=[1]),
    body: AlertUpdateRequest = Body(...),
):
    session = SessionLocal()
    a = session.query(ErrorAlert).filter(ErrorAlert.id == alert_id).first()
    a.status = body.status
    if body.status == "resolved":
        a.resolved_at = _now()
        a.resolved_by_user_id = CURRENT_USER_ID
    else:
        a.resolved_at = None
        a.resolved_by_user_id = None
    session.commit()
    session.refresh(a)
    out = _alert_out(session, a)
    session.close()
    return out


if __name__ == "__main__":
    import uvicorn
    uvicorn.run(app, host=os.getenv("HOST", "127.0.0.1"), port=int(os.getenv("PORT", "8000")))
