import os
import json
from typing import List, Optional, Dict, Any, Literal
from datetime import datetime, timezone

from fastapi import FastAPI, Query, Path, Body
from pydantic import BaseModel, Field, ConfigDict
from sqlalchemy import (
    create_engine, Column, Integer, String, Text, Boolean, DateTime, ForeignKey, UniqueConstraint, or_, func
)
from sqlalchemy.orm import declarative_base, sessionmaker

engine = create_engine(os.getenv("DATABASE_PATH", "sqlite:///flowpilot_workflow_automation.db"), connect_args={"check_same_thread": False})
SessionLocal = sessionmaker(bind=engine, expire_on_commit=False)
Base = declarative_base()

CURRENT_USER_ID = 1


def _now() -> datetime:
    return datetime.now(timezone.utc).replace(tzinfo=None, microsecond=0)


def _dt(value: Optional[datetime]) -> Optional[str]:
    if value is None:
        return None
    if isinstance(value, str):
        return value
    return value.replace(microsecond=0).isoformat()


def _load_json(value: Optional[str]) -> Any:
    if value is None or value == "":
        return None
    return json.loads(value)


# ---------------------------------------------------------------------------
# ORM models (mirror schema.sql)
# ---------------------------------------------------------------------------

class Team(Base):
    __tablename__ = "teams"
    id = Column(Integer, primary_key=True, autoincrement=True)
    name = Column(String, nullable=False, unique=True)
    description = Column(Text)
    slack_channel = Column(String)
    created_at = Column(DateTime, nullable=False, default=_now)


class User(Base):
    __tablename__ = "users"
    id = Column(Integer, primary_key=True, autoincrement=True)
    email = Column(String, nullable=False, unique=True)
    full_name = Column(String, nullable=False)
    role = Column(String, nullable=False, default="editor")
    team_id = Column(Integer, ForeignKey("teams.id", ondelete="SET NULL"))
    timezone = Column(String, nullable=False, default="UTC")
    is_active = Column(Boolean, nullable=False, default=True)
    created_at = Column(DateTime, nullable=False, default=_now)


class Folder(Base):
    __tablename__ = "folders"
    id = Column(Integer, primary_key=True, autoincrement=True)
    name = Column(String, nullable=False, unique=True)
    parent_folder_id = Column(Integer, ForeignKey("folders.id", ondelete="SET NULL"))
    team_id = Column(Integer, ForeignKey("teams.id", ondelete="SET NULL"))
    created_by_user_id = Column(Integer, ForeignKey("users.id", ondelete="SET NULL"))
    created_at = Column(DateTime, nullable=False, default=_now)


class Tag(Base):
    __tablename__ = "tags"
    id = Column(Integer, primary_key=True, autoincrement=True)
    name = Column(String, nullable=False, unique=True)
    color = Column(String, nullable=False, default="#64748b")
    created_at = Column(DateTime, nullable=False, default=_now)


class Workflow(Base):
    __tablename__ = "workflows"
    id = Column(Integer, primary_key=True, autoincrement=True)
    name = Column(String, nullable=False, unique=True)
    description = Column(Text)
    folder_id = Column(Integer, ForeignKey("folders.id", ondelete="SET NULL"))
    owner_user_id = Column(Integer, ForeignKey("users.id", ondelete="RESTRICT"), nullable=False)
    team_id = Column(Integer, ForeignKey("teams.id", ondelete="SET NULL"))
    status = Column(String, nullable=False, default="draft")
    version = Column(Integer, nullable=False, default=1)
    timeout_seconds = Column(Integer, nullable=False, default=3600)
    max_concurrent_runs = Column(Integer, nullable=False, default=1)
    error_notification_email = Column(String)
    created_at = Column(DateTime, nullable=False, default=_now)
    updated_at = Column(DateTime, nullable=False, default=_now)


class WorkflowTag(Base):
    __tablename__ = "workflow_tags"
    workflow_id = Column(Integer, ForeignKey("workflows.id", ondelete="CASCADE"), primary_key=True)
    tag_id = Column(Integer, ForeignKey("tags.id", ondelete="CASCADE"), primary_key=True)
    created_at = Column(DateTime, nullable=False, default=_now)


class WorkflowStep(Base):
    __tablename__ = "workflow_steps"
    id = Column(Integer, primary_key=True, autoincrement=True)
    workflow_id = Column(Integer, ForeignKey("workflows.id", ondelete="CASCADE"), nullable=False)
    position = Column(Integer, nullable=False)
    name = Column(String, nullable=False)
    action_type = Column(String, nullable=False)
    config_json = Column(Text, nullable=False, default="{}")
    on_failure = Column(String, nullable=False, default="stop")
    retry_count = Column(Integer, nullable=False, default=0)
    timeout_seconds = Column(Integer, nullable=False, default=300)
    created_at = Column(DateTime, nullable=False, default=_now)
    updated_at = Column(DateTime, nullable=False, default=_now)
    __table_args__ = (UniqueConstraint("workflow_id", "position"),)


class Trigger(Base):
    __tablename__ = "triggers"
    id = Column(Integer, primary_key=True, autoincrement=True)
    workflow_id = Column(Integer, ForeignKey("workflows.id", ondelete="CASCADE"), nullable=False)
    name = Column(String, nullable=False)
    trigger_type = Column(String, nullable=False)
    cron_expression = Column(String)
    timezone = Column(String, nullable=False, default="UTC")
    webhook_path = Column(String, unique=True)
    event_name = Column(String)
    is_enabled = Column(Boolean, nullable=False, default=True)
    last_fired_at = Column(DateTime)
    created_at = Column(DateTime, nullable=False, default=_now)


class Secret(Base):
    __tablename__ = "secrets"
    id = Column(Integer, primary_key=True, autoincrement=True)
    name = Column(String, nullable=False, unique=True)
    description = Column(Text)
    provider = Column(String, nullable=False, default="vault")
    value_last4 = Column(String, nullable=False)
    version = Column(Integer, nullable=False, default=1)
    created_by_user_id = Column(Integer, ForeignKey("users.id", ondelete="SET NULL"))
    last_rotated_at = Column(DateTime)
    created_at = Column(DateTime, nullable=False, default=_now)


class Variable(Base):
    __tablename__ = "variables"
    id = Column(Integer, primary_key=True, autoincrement=True)
    workflow_id = Column(Integer, ForeignKey("workflows.id", ondelete="CASCADE"))
    key = Column(String, nullable=False)
    value = Column(Text, nullable=False)
    description = Column(Text)
    created_by_user_id = Column(Integer, ForeignKey("users.id", ondelete="SET NULL"))
    created_at = Column(DateTime, nullable=False, default=_now)
    updated_at = Column(DateTime, nullable=False, default=_now)
    __table_args__ = (UniqueConstraint("workflow_id", "key"),)


class WorkflowRun(Base):
    __tablename__ = "workflow_runs"
    id = Column(Integer, primary_key=True, autoincrement=True)
    workflow_id = Column(Integer, ForeignKey("workflows.id", ondelete="CASCADE"), nullable=False)
    trigger_id = Column(Integer, ForeignKey("triggers.id", ondelete="SET NULL"))
    triggered_by_user_id = Column(Integer, ForeignKey("users.id", ondelete="SET NULL"))
    workflow_version = Column(Integer, nullable=False, default=1)
    status = Column(String, nullable=False, default="queued")
    input_json = Column(Text, nullable=False, default="{}")
    error_message = Column(Text)
    retry_of_run_id = Column(Integer, ForeignKey("workflow_runs.id", ondelete="SET NULL"))
    started_at = Column(DateTime)
    finished_at = Column(DateTime)
    duration_ms = Column(Integer)
    created_at = Column(DateTime, nullable=False, default=_now)


class StepRun(Base):
    __tablename__ = "step_runs"
    id = Column(Integer, primary_key=True, autoincrement=True)
    run_id = Column(Integer, ForeignKey("workflow_runs.id", ondelete="CASCADE"), nullable=False)
    step_id = Column(Integer, ForeignKey("workflow_steps.id", ondelete="SET NULL"))
    position = Column(Integer, nullable=False)
    status = Column(String, nullable=False, default="pending")
    attempt = Column(Integer, nullable=False, default=1)
    output_json = Column(Text)
    error_message = Column(Text)
    log_text = Column(Text)
    started_at = Column(DateTime)
    finished_at = Column(DateTime)


class Approval(Base):
    __tablename__ = "approvals"
    id = Column(Integer, primary_key=True, autoincrement=True)
    step_run_id = Column(Integer, ForeignKey("step_runs.id", ondelete="CASCADE"), nullable=False)
    run_id = Column(Integer, ForeignKey("workflow_runs.id", ondelete="CASCADE"), nullable=False)
    approver_user_id = Column(Integer, ForeignKey("users.id", ondelete="RESTRICT"), nullable=False)
    status = Column(String, nullable=False, default="pending")
    comment = Column(Text)
    requested_at = Column(DateTime, nullable=False, default=_now)
    decided_at = Column(DateTime)


app = FastAPI(
    title="FlowPilot Workflow Automation API",
    description="Internal business-process automation: workflows, ordered steps, triggers, runs with per-step logs, approvals, variables and named secrets.",
    version="1.0.0",
)

ActionType = Literal["send_email", "http_request", "approval", "delay", "condition", "slack_message", "create_record", "transform", "run_script"]
WorkflowStatus = Literal["draft", "active", "paused", "archived"]
TriggerType = Literal["schedule", "webhook", "event", "manual"]
OnFailure = Literal["stop", "continue", "retry"]
RunStatus = Literal["queued", "running", "waiting_approval", "succeeded", "failed", "cancelled"]
StepRunStatus = Literal["pending", "running", "waiting", "succeeded", "failed", "skipped"]


# ---------------------------------------------------------------------------
# Shared response models
# ---------------------------------------------------------------------------

class DeleteResponse(BaseModel):
    id: int = Field(..., description="ID of the deleted object", examples=[12])
    deleted: bool = Field(..., description="True when the object was removed", examples=[True])
    message: str = Field(..., description="Human readable confirmation", examples=["Trigger 12 deleted"])


# ---------------------------------------------------------------------------
# Users and teams
# ---------------------------------------------------------------------------

class UserResponse(BaseModel):
    id: int = Field(..., description="User ID", examples=[1])
    email: str = Field(..., description="Work email", examples=["maya.chen@flowpilot.io"])
    full_name: str = Field(..., description="Full name", examples=["Maya Chen"])
    role: str = Field(..., description="Platform role: admin, editor or viewer", examples=["admin"])
    team_id: Optional[int] = Field(None, description="Team the user belongs to", examples=[1])
    timezone: str = Field(..., description="IANA timezone", examples=["America/Los_Angeles"])
    is_active: bool = Field(..., description="Whether the account is active", examples=[True])
    created_at: Optional[str] = Field(None, description="Creation time (ISO 8601)", examples=["2024-01-15T09:00:00"])
    model_config = ConfigDict(from_attributes=True)


class UserListResponse(BaseModel):
    users: List[UserResponse] = Field(..., description="Matching users")
    total: int = Field(..., description="Number of users returned", examples=[3])


def _user_out(u: User) -> UserResponse:
    return UserResponse(
        id=u.id, email=u.email, full_name=u.full_name, role=u.role, team_id=u.team_id,
        timezone=u.timezone, is_active=bool(u.is_active), created_at=_dt(u.created_at),
    )


@app.get(
    "/api/users/me",
    summary="Get the current user",
    description="Returns the profile of the signed-in user (the person the assistant acts for).",
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
    summary="List users",
    description="List platform users, optionally filtered by a name/email search, team or role.",
    tags=["users"],
    operation_id="list_users",
    response_model=UserListResponse,
)
async def list_users(
    search: Optional[str] = Query(None, description="Case-insensitive substring of full name or email", examples=["grace"]),
    team_id: Optional[int] = Query(None, description="Only users in this team", examples=[3]),
    role: Optional[Literal["admin", "editor", "viewer"]] = Query(None, description="Only users with this role", examples=["editor"]),
    is_active: Optional[bool] = Query(None, description="Filter by active flag", examples=[True]),
):
    session = SessionLocal()
    q = session.query(User)
    if search:
        like = f"%{search}%"
        q = q.filter(or_(User.full_name.ilike(like), User.email.ilike(like)))
    if team_id is not None:
        q = q.filter(User.team_id == team_id)
    if role:
        q = q.filter(User.role == role)
    if is_active is not None:
        q = q.filter(User.is_active == is_active)
    users = [_user_out(u) for u in q.order_by(User.id).all()]
    session.close()
    return UserListResponse(users=users, total=len(users))


class TeamResponse(BaseModel):
    id: int = Field(..., description="Team ID", examples=[2])
    name: str = Field(..., description="Team name", examples=["People Operations"])
    description: Optional[str] = Field(None, description="What the team does")
    slack_channel: Optional[str] = Field(None, description="Team Slack channel", examples=["#people-ops"])
    member_count: int = Field(..., description="Number of users in the team", examples=[2])
    model_config = ConfigDict(from_attributes=True)


class TeamListResponse(BaseModel):
    teams: List[TeamResponse] = Field(..., description="Matching teams")


@app.get(
    "/api/teams",
    summary="List teams",
    description="List teams that own workflows, optionally filtered by name.",
    tags=["teams"],
    operation_id="list_teams",
    response_model=TeamListResponse,
)
async def list_teams(
    name: Optional[str] = Query(None, description="Case-insensitive substring of the team name", examples=["Legal"]),
):
    session = SessionLocal()
    q = session.query(Team)
    if name:
        q = q.filter(Team.name.ilike(f"%{name}%"))
    out = []
    for t in q.order_by(Team.id).all():
        count = session.query(User).filter(User.team_id == t.id).count()
        out.append(TeamResponse(id=t.id, name=t.name, description=t.description, slack_channel=t.slack_channel, member_count=count))
    session.close()
    return TeamListResponse(teams=out)


# ---------------------------------------------------------------------------
# Folders
# ---------------------------------------------------------------------------

class FolderResponse(BaseModel):
    id: int = Field(..., description="Folder ID", examples=[2])
    name: str = Field(..., description="Folder name", examples=["HR"])
    parent_folder_id: Optional[int] = Field(None, description="Parent folder ID, null for top-level folders", examples=[None])
    team_id: Optional[int] = Field(None, description="Owning team ID", examples=[2])
    created_by_user_id: Optional[int] = Field(None, description="User who created the folder", examples=[5])
    workflow_count: int = Field(..., description="Number of workflows directly in the folder", examples=[2])
    created_at: Optional[str] = Field(None, description="Creation time (ISO 8601)")
    model_config = ConfigDict(from_attributes=True)


class FolderListResponse(BaseModel):
    folders: List[FolderResponse] = Field(..., description="Matching folders")


def _folder_out(session, f: Folder) -> FolderResponse:
    count = session.query(Workflow).filter(Workflow.folder_id == f.id).count()
    return FolderResponse(
        id=f.id, name=f.name, parent_folder_id=f.parent_folder_id, team_id=f.team_id,
        created_by_user_id=f.created_by_user_id, workflow_count=count, created_at=_dt(f.created_at),
    )


@app.get(
    "/api/folders",
    summary="List folders",
    description="List workflow folders, optionally filtered by name, parent folder or team.",
    tags=["folders"],
    operation_id="list_folders",
    response_model=FolderListResponse,
)
async def list_folders(
    name: Optional[str] = Query(None, description="Case-insensitive substring of the folder name", examples=["HR"]),
    parent_folder_id: Optional[int] = Query(None, description="Only sub-folders of this folder", examples=[1]),
    team_id: Optional[int] = Query(None, description="Only folders owned by this team", examples=[2]),
):
    session = SessionLocal()
    q = session.query(Folder)
    if name:
        q = q.filter(Folder.name.ilike(f"%{name}%"))
    if parent_folder_id is not None:
        q = q.filter(Folder.parent_folder_id == parent_folder_id)
    if team_id is not None:
        q = q.filter(Folder.team_id == team_id)
    out = [_folder_out(session, f) for f in q.order_by(Folder.id).all()]
    session.close()
    return FolderListResponse(folders=out)


class FolderCreateRequest(BaseModel):
    name: str = Field(..., min_length=1, description="Unique folder name", examples=["Contractors"])
    parent_folder_id: Optional[int] = Field(None, description="Parent folder ID for a nested folder", examples=[2])
    team_id: Optional[int] = Field(None, description="Owning team ID", examples=[2])


@app.post(
    "/api/folders",
    summary="Create a folder",
    description="Create a new (optionally nested) folder for organising workflows. The current user is recorded as creator.",
    tags=["folders"],
    operation_id="create_folder",
    response_model=FolderResponse,
)
async def create_folder(body: FolderCreateRequest = Body(...)):
    session = SessionLocal()
    f = Folder(name=body.name, parent_folder_id=body.parent_folder_id, team_id=body.team_id, created_by_user_id=CURRENT_USER_ID, created_at=_now())
    session.add(f)
    session.commit()
    session.refresh(f)
    out = _folder_out(session, f)
    session.close()
    return out


# ---------------------------------------------------------------------------
# Tags
# ---------------------------------------------------------------------------

class TagResponse(BaseModel):
    id: int = Field(..., description="Tag ID", examples=[1])
    name: str = Field(..., description="Tag name", examples=["critical"])
    color: str = Field(..., description="Hex color", examples=["#dc2626"])
    workflow_count: int = Field(..., description="Number of workflows carrying the tag", examples=[5])
    model_config = ConfigDict(from_attributes=True)


class TagListResponse(BaseModel):
    tags: List[TagResponse] = Field(..., description="Matching tags")


@app.get(
    "/api/tags",
    summary="List tags",
    description="List workflow tags with usage counts, optionally filtered by name.",
    tags=["tags"],
    operation_id="list_tags",
    response_model=TagListResponse,
)
async def list_tags(
    name: Optional[str] = Query(None, description="Case-insensitive substring of the tag name", examples=["fin"]),
):
    session = SessionLocal()
    q = session.query(Tag)
    if name:
        q = q.filter(Tag.name.ilike(f"%{name}%"))
    out = []
    for t in q.order_by(Tag.id).all():
        count = session.query(WorkflowTag).filter(WorkflowTag.tag_id == t.id).count()
        out.append(TagResponse(id=t.id, name=t.name, color=t.color, workflow_count=count))
    session.close()
    return TagListResponse(tags=out)


class WorkflowTagAddRequest(BaseModel):
    tag_name: str = Field(..., min_length=1, description="Tag name; the tag is created if it does not exist yet", examples=["reminders"])
    color: Optional[str] = Field(None, description="Hex color used only when a new tag is created", examples=["#f97316"])


class WorkflowTagsResponse(BaseModel):
    workflow_id: int = Field(..., description="Workflow ID", examples=[3])
    tags: List[TagResponse] = Field(..., description="All tags now on the workflow")


def _workflow_tags(session, workflow_id: int) -> List[TagResponse]:
    rows = (
        session.query(Tag)
        .join(WorkflowTag, WorkflowTag.tag_id == Tag.id)
        .filter(WorkflowTag.workflow_id == workflow_id)
        .order_by(Tag.name)
        .all()
    )
    out = []
    for t in rows:
        count = session.query(WorkflowTag).filter(WorkflowTag.tag_id == t.id).count()
        out.append(TagResponse(id=t.id, name=t.name, color=t.color, workflow_count=count))
    return out


@app.post(
    "/api/workflows/{workflow_id}/tags",
    summary="Tag a workflow",
    description="Attach a tag (by name) to a workflow. Unknown tag names are created on the fly. Adding a tag that is already attached is a no-op.",
    tags=["tags"],
    operation_id="add_workflow_tag",
    response_model=WorkflowTagsResponse,
)
async def add_workflow_tag(
    workflow_id: int = Path(..., description="Workflow ID", examples=[3]),
    body: WorkflowTagAddRequest = Body(...),
):
    session = SessionLocal()
    wf = session.query(Workflow).filter(Workflow.id == workflow_id).first()
    tag = session.query(Tag).filter(func.lower(Tag.name) == body.tag_name.strip().lower()).first()
    if tag is None:
        tag = Tag(name=body.tag_name.strip(), color=body.color or "#64748b", created_at=_now())
        session.add(tag)
        session.flush()
    link = session.query(WorkflowTag).filter(WorkflowTag.workflow_id == wf.id, WorkflowTag.tag_id == tag.id).first()
    if link is None:
        session.add(WorkflowTag(workflow_id=wf.id, tag_id=tag.id, created_at=_now()))
        wf.updated_at = _now()
    session.commit()
    out = WorkflowTagsResponse(workflow_id=wf.id, tags=_workflow_tags(session, wf.id))
    session.close()
    return out


@app.delete(
    "/api/workflows/{workflow_id}/tags/{tag_id}",
    summary="Remove a tag from a workflow",
    description="Detach a tag from a workflow. The tag itself is kept.",
    tags=["tags"],
    operation_id="remove_workflow_tag",
    response_model=WorkflowTagsResponse,
)
async def remove_workflow_tag(
    workflow_id: int = Path(..., description="Workflow ID", examples=[3]),
    tag_id: int = Path(..., description="Tag ID to detach", examples=[1]),
):
    session = SessionLocal()
    wf = session.query(Workflow).filter(Workflow.id == workflow_id).first()
    link = session.query(WorkflowTag).filter(WorkflowTag.workflow_id == wf.id, WorkflowTag.tag_id == tag_id).first()
    if link is not None:
        session.delete(link)
        wf.updated_at = _now()
    session.commit()
    out = WorkflowTagsResponse(workflow_id=wf.id, tags=_workflow_tags(session, wf.id))
    session.close()
    return out


# ---------------------------------------------------------------------------
# Workflows
# ---------------------------------------------------------------------------

class WorkflowSummary(BaseModel):
    id: int = Field(..., description="Workflow ID", examples=[1])
    name: str = Field(..., description="Workflow name", examples=["Employee Onboarding"])
    description: Optional[str] = Field(None, description="What the workflow does")
    status: str = Field(..., description="draft, active, paused or archived", examples=["active"])
    version: int = Field(..., description="Published version number", examples=[4])
    folder_id: Optional[int] = Field(None, description="Folder ID", examples=[2])
    owner_user_id: int = Field(..., description="Owner user ID", examples=[5])
    team_id: Optional[int] = Field(None, description="Owning team ID", examples=[2])
    step_count: int = Field(..., description="Number of steps", examples=[5])
    tags: List[str] = Field(..., description="Tag names", examples=[["onboarding"]])
    updated_at: Optional[str] = Field(None, description="Last modification time (ISO 8601)")
    model_config = ConfigDict(from_attributes=True)


class WorkflowListResponse(BaseModel):
    workflows: List[WorkflowSummary] = Field(..., description="Matching workflows")
    total: int = Field(..., description="Number of workflows returned", examples=[14])


class StepResponse(BaseModel):
    id: int = Field(..., description="Step ID", examples=[2])
    workflow_id: int = Field(..., description="Workflow ID", examples=[1])
    position: int = Field(..., description="1-based execution order", examples=[2])
    name: str = Field(..., description="Step name", examples=["Send welcome email"])
    action_type: str = Field(..., description="Action type", examples=["send_email"])
    config: Dict[str, Any] = Field(..., description="Action configuration; may reference {{vars.KEY}} and {{secrets.NAME}}", examples=[{"to": "{{input.personal_email}}", "subject": "Welcome!"}])
    on_failure: str = Field(..., description="stop, continue or retry", examples=["continue"])
    retry_count: int = Field(..., description="Retries before the step is marked failed", examples=[1])
    timeout_seconds: int = Field(..., description="Step timeout", examples=[60])
    updated_at: Optional[str] = Field(None, description="Last modification time (ISO 8601)")
    model_config = ConfigDict(from_attributes=True)


class TriggerResponse(BaseModel):
    id: int = Field(..., description="Trigger ID", examples=[5])
    workflow_id: int = Field(..., description="Workflow ID", examples=[4])
    name: str = Field(..., description="Trigger name", examples=["Nightly 02:00 UTC"])
    trigger_type: str = Field(..., description="schedule, webhook, event or manual", examples=["schedule"])
    cron_expression: Optional[str] = Field(None, description="Cron expression for schedule triggers", examples=["0 2 * * *"])
    timezone: str = Field(..., description="Timezone the cron expression is evaluated in", examples=["UTC"])
    webhook_path: Optional[str] = Field(None, description="Inbound path for webhook triggers", examples=["/hooks/vendor-invoices"])
    event_name: Optional[str] = Field(None, description="Platform event for event triggers", examples=["bamboohr.employee.created"])
    is_enabled: bool = Field(..., description="Whether the trigger fires", examples=[True])
    last_fired_at: Optional[str] = Field(None, description="Last time the trigger fired (ISO 8601)")
    created_at: Optional[str] = Field(None, description="Creation time (ISO 8601)")
    model_config = ConfigDict(from_attributes=True)


class WorkflowDetail(BaseModel):
    id: int = Field(..., description="Workflow ID", examples=[1])
    name: str = Field(..., description="Workflow name", examples=["Employee Onboarding"])
    description: Optional[str] = Field(None, description="What the workflow does")
    status: str = Field(..., description="draft, active, paused or archived", examples=["active"])
    version: int = Field(..., description="Published version number", examples=[4])
    folder_id: Optional[int] = Field(None, description="Folder ID", examples=[2])
    owner_user_id: int = Field(..., description="Owner user ID", examples=[5])
    team_id: Optional[int] = Field(None, description="Owning team ID", examples=[2])
    timeout_seconds: int = Field(..., description="Whole-run timeout in seconds", examples=[3600])
    max_concurrent_runs: int = Field(..., description="Maximum runs executing at once", examples=[1])
    error_notification_email: Optional[str] = Field(None, description="Where failure notifications go", examples=["ops@flowpilot.io"])
    tags: List[str] = Field(..., description="Tag names", examples=[["onboarding"]])
    steps: List[StepResponse] = Field(..., description="Steps in execution order")
    triggers: List[TriggerResponse] = Field(..., description="Triggers that start the workflow")
    created_at: Optional[str] = Field(None, description="Creation time (ISO 8601)")
    updated_at: Optional[str] = Field(None, description="Last modification time (ISO 8601)")
    model_config = ConfigDict(from_attributes=True)


def _tag_names(session, workflow_id: int) -> List[str]:
    rows = (
        session.query(Tag.name)
        .join(WorkflowTag, WorkflowTag.tag_id == Tag.id)
        .filter(WorkflowTag.workflow_id == workflow_id)
        .order_by(Tag.name)
        .all()
    )
    return [r[0] for r in rows]


def _step_out(s: WorkflowStep) -> StepResponse:
    return StepResponse(
        id=s.id, workflow_id=s.workflow_id, position=s.position, name=s.name, action_type=s.action_type,
        config=_load_json(s.config_json) or {}, on_failure=s.on_failure, retry_count=s.retry_count,
        timeout_seconds=s.timeout_seconds, updated_at=_dt(s.updated_at),
    )


def _trigger_out(t: Trigger) -> TriggerResponse:
    return TriggerResponse(
        id=t.id, workflow_id=t.workflow_id, name=t.name, trigger_type=t.trigger_type, cron_expression=t.cron_expression,
        timezone=t.timezone, webhook_path=t.webhook_path, event_name=t.event_name, is_enabled=bool(t.is_enabled),
        last_fired_at=_dt(t.last_fired_at), created_at=_dt(t.created_at),
    )


def _workflow_summary(session, w: Workflow) -> WorkflowSummary:
    count = session.query(WorkflowStep).filter(WorkflowStep.workflow_id == w.id).count()
    return WorkflowSummary(
        id=w.id, name=w.name, description=w.description, status=w.status, version=w.version, folder_id=w.folder_id,
        owner_user_id=w.owner_user_id, team_id=w.team_id, step_count=count, tags=_tag_names(session, w.id),
        updated_at=_dt(w.updated_at),
    )


def _workflow_detail(session, w: Workflow) -> WorkflowDetail:
    steps = session.query(WorkflowStep).filter(WorkflowStep.workflow_id == w.id).order_by(WorkflowStep.position).all()
    triggers = session.query(Trigger).filter(Trigger.workflow_id == w.id).order_by(Trigger.id).all()
    return WorkflowDetail(
        id=w.id, name=w.name, description=w.description, status=w.status, version=w.version, folder_id=w.folder_id,
        owner_user_id=w.owner_user_id, team_id=w.team_id, timeout_seconds=w.timeout_seconds,
        max_concurrent_runs=w.max_concurrent_runs, error_notification_email=w.error_notification_email,
        tags=_tag_names(session, w.id), steps=[_step_out(s) for s in steps], triggers=[_trigger_out(t) for t in triggers],
        created_at=_dt(w.created_at), updated_at=_dt(w.updated_at),
    )


@app.get(
    "/api/workflows",
    summary="List workflows",
    description="Search workflows by name and filter by status, folder, team, owner or tag. Use this to look up a workflow ID from its name.",
    tags=["workflows"],
    operation_id="list_workflows",
    response_model=WorkflowListResponse,
)
async def list_workflows(
    name: Optional[str] = Query(None, description="Case-insensitive substring of the workflow name", examples=["Onboarding"]),
    status: Optional[WorkflowStatus] = Query(None, description="Only workflows with this status", examples=["active"]),
    folder_id: Optional[int] = Query(None, description="Only workflows in this folder", examples=[2]),
    team_id: Optional[int] = Query(None, description="Only workflows owned by this team", examples=[2]),
    owner_user_id: Optional[int] = Query(None, description="Only workflows owned by this user", examples=[5]),
    tag: Optional[str] = Query(None, description="Only workflows carrying this tag name", examples=["critical"]),
):
    session = SessionLocal()
    q = session.query(Workflow)
    if name:
        q = q.filter(Workflow.name.ilike(f"%{name}%"))
    if status:
        q = q.filter(Workflow.status == status)
    if folder_id is not None:
        q = q.filter(Workflow.folder_id == folder_id)
    if team_id is not None:
        q = q.filter(Workflow.team_id == team_id)
    if owner_user_id is not None:
        q = q.filter(Workflow.owner_user_id == owner_user_id)
    if tag:
        q = q.join(WorkflowTag, WorkflowTag.workflow_id == Workflow.id).join(Tag, Tag.id == WorkflowTag.tag_id).filter(func.lower(Tag.name) == tag.lower())
    out = [_workflow_summary(session, w) for w in q.order_by(Workflow.id).all()]
    session.close()
    return WorkflowListResponse(workflows=out, total=len(out))


@app.get(
    "/api/workflows/{workflow_id}",
    summary="Get a workflow",
    description="Get one workflow with its ordered steps, triggers and tags.",
    tags=["workflows"],
    operation_id="get_workflow",
    response_model=WorkflowDetail,
)
async def get_workflow(workflow_id: int = Path(..., description="Workflow ID", examples=[1])):
    session = SessionLocal()
    w = session.query(Workflow).filter(Workflow.id == workflow_id).first()
    out = _workflow_detail(session, w)
    session.close()
    return out


class WorkflowCreateRequest(BaseModel):
    name: str = Field(..., min_length=1, description="Unique workflow name", examples=["Contract Renewal Reminder"])
    description: Optional[str] = Field(None, description="What the workflow does", examples=["Reminds legal about contracts that expire soon"])
    folder_id: Optional[int] = Field(None, description="Folder to place the workflow in", examples=[5])
    team_id: Optional[int] = Field(None, description="Owning team ID", examples=[5])
    owner_user_id: Optional[int] = Field(None, description="Owner user ID; defaults to the current user", examples=[1])
    timeout_seconds: Optional[int] = Field(None, gt=0, description="Whole-run timeout in seconds (default 3600)", examples=[3600])
    max_concurrent_runs: Optional[int] = Field(None, ge=1, description="Maximum concurrent runs (default 1)", examples=[1])
    error_notification_email: Optional[str] = Field(None, description="Where failure notifications go", examples=["legal@flowpilot.io"])


@app.post(
    "/api/workflows",
    summary="Create a workflow",
    description="Create a new workflow in draft status. Add steps and triggers afterwards, then publish it.",
    tags=["workflows"],
    operation_id="create_workflow",
    response_model=WorkflowDetail,
)
async def create_workflow(body: WorkflowCreateRequest = Body(...)):
    session = SessionLocal()
    now = _now()
    w = Workflow(
        name=body.name,
        description=body.description,
        folder_id=body.folder_id,
        team_id=body.team_id,
        owner_user_id=body.owner_user_id or CURRENT_USER_ID,
        status="draft",
        version=1,
        timeout_seconds=body.timeout_seconds or 3600,
        max_concurrent_runs=body.max_concurrent_runs or 1,
        error_notification_email=body.error_notification_email,
        created_at=now,
        updated_at=now,
    )
    session.add(w)
    session.commit()
    session.refresh(w)
    out = _workflow_detail(session, w)
    session.close()
    return out


class WorkflowUpdateRequest(BaseModel):
    name: Optional[str] = Field(None, min_length=1, description="New unique name", examples=["Employee Onboarding v2"])
    description: Optional[str] = Field(None, description="New description")
    status: Optional[WorkflowStatus] = Field(None, description="New status: draft, active, paused or archived", examples=["paused"])
    folder_id: Optional[int] = Field(None, description="Move to this folder", examples=[6])
    team_id: Optional[int] = Field(None, description="New owning team ID", examples=[1])
    owner_user_id: Optional[int] = Field(None, description="Transfer ownership to this user", examples=[2])
    timeout_seconds: Optional[int] = Field(None, gt=0, description="Whole-run timeout in seconds", examples=[7200])
    max_concurrent_runs: Optional[int] = Field(None, ge=1, description="Maximum concurrent runs", examples=[2])
    error_notification_email: Optional[str] = Field(None, description="Where failure notifications go", examples=["ops@flowpilot.io"])


@app.patch(
    "/api/workflows/{workflow_id}",
    summary="Update a workflow",
    description="Update workflow settings. Only the fields provided are changed. Use status 'paused' to pause and 'active' to resume.",
    tags=["workflows"],
    operation_id="update_workflow",
    response_model=WorkflowDetail,
)
async def update_workflow(
    workflow_id: int = Path(..., description="Workflow ID", examples=[1]),
    body: WorkflowUpdateRequest = Body(...),
):
    session = SessionLocal()
    w = session.query(Workflow).filter(Workflow.id == workflow_id).first()
    data = body.model_dump(exclude_unset=True)
    for key, value in data.items():
        if value is None and key in ("name", "status", "owner_user_id", "timeout_seconds", "max_concurrent_runs"):
            continue
        setattr(w, key, value)
    w.updated_at = _now()
    session.commit()
    session.refresh(w)
    out = _workflow_detail(session, w)
    session.close()
    return out


@app.delete(
    "/api/workflows/{workflow_id}",
    summary="Delete a workflow",
    description="Permanently delete a workflow together with its steps, triggers, tags links, workflow variables and run history.",
    tags=["workflows"],
    operation_id="delete_workflow",
    response_model=DeleteResponse,
)
async def delete_workflow(workflow_id: int = Path(..., description="Workflow ID", examples=[10])):
    session = SessionLocal()
    w = session.query(Workflow).filter(Workflow.id == workflow_id).first()
    run_ids = [r.id for r in session.query(WorkflowRun).filter(WorkflowRun.workflow_id == w.id).all()]
    if run_ids:
        session.query(Approval).filter(Approval.run_id.in_(run_ids)).delete(synchronize_session=False)
        session.query(StepRun).filter(StepRun.run_id.in_(run_ids)).delete(synchronize_session=False)
        session.query(WorkflowRun).filter(WorkflowRun.id.in_(run_ids)).delete(synchronize_session=False)
    session.query(WorkflowStep).filter(WorkflowStep.workflow_id == w.id).delete(synchronize_session=False)
    session.query(Trigger).filter(Trigger.workflow_id == w.id).delete(synchronize_session=False)
    session.query(WorkflowTag).filter(WorkflowTag.workflow_id == w.id).delete(synchronize_session=False)
    session.query(Variable).filter(Variable.workflow_id == w.id).delete(synchronize_session=False)
    wid = w.id
    name = w.name
    session.delete(w)
    session.commit()
    session.close()
    return DeleteResponse(id=wid, deleted=True, message=f"Workflow '{name}' deleted")


class WorkflowDuplicateRequest(BaseModel):
    new_name: str = Field(..., min_length=1, description="Unique name for the copy", examples=["Contractor Onboarding"])
    folder_id: Optional[int] = Field(None, description="Folder for the copy; defaults to the source workflow's folder", examples=[2])


@app.post(
    "/api/workflows/{workflow_id}/duplicate",
    summary="Duplicate a workflow",
    description="Copy a workflow's settings, steps, tags and workflow-scoped variables into a new draft workflow owned by the current user. Triggers and run history are not copied.",
    tags=["workflows"],
    operation_id="duplicate_workflow",
    response_model=WorkflowDetail,
)
async def duplicate_workflow(
    workflow_id: int = Path(..., description="ID of the workflow to copy", examples=[1]),
    body: WorkflowDuplicateRequest = Body(...),
):
    session = SessionLocal()
    src = session.query(Workflow).filter(Workflow.id == workflow_id).first()
    now = _now()
    copy = Workflow(
        name=body.new_name,
        description=src.description,
        folder_id=body.folder_id if body.folder_id is not None else src.folder_id,
        owner_user_id=CURRENT_USER_ID,
        team_id=src.team_id,
        status="draft",
        version=1,
        timeout_seconds=src.timeout_seconds,
        max_concurrent_runs=src.max_concurrent_runs,
        error_notification_email=src.error_notification_email,
        created_at=now,
        updated_at=now,
    )
    session.add(copy)
    session.flush()
    for s in session.query(WorkflowStep).filter(WorkflowStep.workflow_id == src.id).order_by(WorkflowStep.position).all():
        session.add(WorkflowStep(
            workflow_id=copy.id, position=s.position, name=s.name, action_type=s.action_type, config_json=s.config_json,
            on_failure=s.on_failure, retry_count=s.retry_count, timeout_seconds=s.timeout_seconds, created_at=now, updated_at=now,
        ))
    for link in session.query(WorkflowTag).filter(WorkflowTag.workflow_id == src.id).all():
        session.add(WorkflowTag(workflow_id=copy.id, tag_id=link.tag_id, created_at=now))
    for v in session.query(Variable).filter(Variable.workflow_id == src.id).all():
        session.add(Variable(workflow_id=copy.id, key=v.key, value=v.value, description=v.description, created_by_user_id=CURRENT_USER_ID, created_at=now, updated_at=now))
    session.commit()
    session.refresh(copy)
    out = _workflow_detail(session, copy)
    session.close()
    return out


@app.post(
    "/api/workflows/{workflow_id}/publish",
    summary="Publish a workflow",
    description="Publish the current definition and set the workflow status to active so its triggers start firing. The first publish of a new draft keeps version 1; later publishes increment the version.",
    tags=["workflows"],
    operation_id="publish_workflow",
    response_model=WorkflowDetail,
)
async def publish_workflow(workflow_id: int = Path(..., description="Workflow ID", examples=[13])):
    session = SessionLocal()
    w = session.query(Workflow).filter(Workflow.id == workflow_id).first()
    if not (w.status == "draft" and w.version == 1):
        w.version = w.version + 1
    w.status = "active"
    w.updated_at = _now()
    session.commit()
    session.refresh(w)
    out = _workflow_detail(session, w)
    session.close()
    return out


# ---------------------------------------------------------------------------
# Steps
# ---------------------------------------------------------------------------

class StepListResponse(BaseModel):
    workflow_id: int = Field(..., description="Workflow ID", examples=[1])
    steps: List[StepResponse] = Field(..., description="Steps in execution order")


@app.get(
    "/api/workflows/{workflow_id}/steps",
    summary="List workflow steps",
    description="List a workflow's steps in execution order, optionally filtered by action type or name.",
    tags=["steps"],
    operation_id="list_workflow_steps",
    response_model=StepListResponse,
)
async def list_workflow_steps(
    workflow_id: int = Path(..., description="Workflow ID", examples=[1]),
    action_type: Optional[ActionType] = Query(None, description="Only steps of this action type", examples=["send_email"]),
    name: Optional[str] = Query(None, description="Case-insensitive substring of the step name", examples=["welcome"]),
):
    session = SessionLocal()
    q = session.query(WorkflowStep).filter(WorkflowStep.workflow_id == workflow_id)
    if action_type:
        q = q.filter(WorkflowStep.action_type == action_type)
    if name:
        q = q.filter(WorkflowStep.name.ilike(f"%{name}%"))
    out = [_step_out(s) for s in q.order_by(WorkflowStep.position).all()]
    session.close()
    return StepListResponse(workflow_id=workflow_id, steps=out)


def _renumber(session, steps: List[WorkflowStep]) -> None:
    # two-phase renumbering keeps UNIQUE(workflow_id, position) satisfied
    for s in steps:
        s.position = s.position + 1000
    session.flush()
    for idx, s in enumerate(steps):
        s.position = idx + 1
    session.flush()


class StepCreateRequest(BaseModel):
    name: str = Field(..., min_length=1, description="Step name", examples=["Wait 1 day"])
    action_type: ActionType = Field(..., description="One of send_email, http_request, approval, delay, condition, slack_message, create_record, transform, run_script", examples=["delay"])
    config: Optional[Dict[str, Any]] = Field(None, description="Action configuration object (e.g. {\"to\": ..., \"subject\": ...} for send_email, {\"method\": ..., \"url\": ...} for http_request, {\"duration\": \"1d\"} for delay)", examples=[{"duration": "1d"}])
    position: Optional[int] = Field(None, ge=1, description="1-based position to insert at; later steps shift down. Omit to append at the end.", examples=[3])
    on_failure: Optional[OnFailure] = Field(None, description="stop (default), continue or retry", examples=["stop"])
    retry_count: Optional[int] = Field(None, ge=0, le=10, description="Retries before failing (default 0)", examples=[0])
    timeout_seconds: Optional[int] = Field(None, gt=0, description="Step timeout in seconds (default 300)", examples=[300])


@app.post(
    "/api/workflows/{workflow_id}/steps",
    summary="Add a step to a workflow",
    description="Insert a new step at a given position (shifting later steps down) or append it at the end.",
    tags=["steps"],
    operation_id="create_workflow_step",
    response_model=StepResponse,
)
async def create_workflow_step(
    workflow_id: int = Path(..., description="Workflow ID", examples=[1]),
    body: StepCreateRequest = Body(...),
):
    session = SessionLocal()
    w = session.query(Workflow).filter(Workflow.id == workflow_id).first()
    existing = session.query(WorkflowStep).filter(WorkflowStep.workflow_id == w.id).order_by(WorkflowStep.position).all()
    now = _now()
    step = WorkflowStep(
        workflow_id=w.id, position=len(existing) + 1001, name=body.name, action_type=body.action_type,
        config_json=json.dumps(body.config or {}), on_failure=body.on_failure or "stop",
        retry_count=body.retry_count if body.retry_count is not None else 0,
        timeout_seconds=body.timeout_seconds or 300, created_at=now, updated_at=now,
    )
    session.add(step)
    session.flush()
    index = len(existing)
    if body.position is not None and body.position <= len(existing):
        index = body.position - 1
    ordered = existing[:index] + [step] + existing[index:]
    _renumber(session, ordered)
    w.updated_at = now
    session.commit()
    session.refresh(step)
    out = _step_out(step)
    session.close()
    return out


class StepUpdateRequest(BaseModel):
    name: Optional[str] = Field(None, min_length=1, description="New step name", examples=["Send welcome email"])
    action_type: Optional[ActionType] = Field(None, description="New action type", examples=["send_email"])
    config: Optional[Dict[str, Any]] = Field(None, description="Replace the whole configuration object", examples=[{"to": "{{input.personal_email}}", "subject": "Welcome!"}])
    config_merge: Optional[Dict[str, Any]] = Field(None, description="Keys to merge into the existing configuration (other keys are kept)", examples=[{"subject": "Welcome aboard!"}])
    on_failure: Optional[OnFailure] = Field(None, description="stop, continue or retry", examples=["retry"])
    retry_count: Optional[int] = Field(None, ge=0, le=10, description="Retries before failing", examples=[3])
    timeout_seconds: Optional[int] = Field(None, gt=0, description="Step timeout in seconds", examples=[120])


@app.patch(
    "/api/steps/{step_id}",
    summary="Update a workflow step",
    description="Update a step's name, action type, configuration (replace with config or merge keys with config_merge), failure policy, retries or timeout.",
    tags=["steps"],
    operation_id="update_workflow_step",
    response_model=StepResponse,
)
async def update_workflow_step(
    step_id: int = Path(..., description="Step ID", examples=[2]),
    body: StepUpdateRequest = Body(...),
):
    session = SessionLocal()
    s = session.query(WorkflowStep).filter(WorkflowStep.id == step_id).first()
    if body.name is not None:
        s.name = body.name
    if body.action_type is not None:
        s.action_type = body.action_type
    if body.config is not None:
        s.config_json = json.dumps(body.config)
    if body.config_merge is not None:
        cfg = _load_json(s.config_json) or {}
        cfg.update(body.config_merge)
        s.config_json = json.dumps(cfg)
    if body.on_failure is not None:
        s.on_failure = body.on_failure
    if body.retry_count is not None:
        s.retry_count = body.retry_count
    if body.timeout_seconds is not None:
        s.timeout_seconds = body.timeout_seconds
    now = _now()
    s.updated_at = now
    w = session.query(Workflow).filter(Workflow.id == s.workflow_id).first()
    w.updated_at = now
    session.commit()
    session.refresh(s)
    out = _step_out(s)
    session.close()
    return out


@app.delete(
    "/api/steps/{step_id}",
    summary="Delete a workflow step",
    description="Remove a step from its workflow; the following steps move up one position.",
    tags=["steps"],
    operation_id="delete_workflow_step",
    response_model=DeleteResponse,
)
async def delete_workflow_step(step_id: int = Path(..., description="Step ID", examples=[4])):
    session = SessionLocal()
    s = session.query(WorkflowStep).filter(WorkflowStep.id == step_id).first()
    workflow_id = s.workflow_id
    name = s.name
    session.delete(s)
    session.flush()
    remaining = session.query(WorkflowStep).filter(WorkflowStep.workflow_id == workflow_id).order_by(WorkflowStep.position).all()
    _renumber(session, remaining)
    w = session.query(Workflow).filter(Workflow.id == workflow_id).first()
    w.updated_at = _now()
    session.commit()
    session.close()
    return DeleteResponse(id=step_id, deleted=True, message=f"Step '{name}' deleted")


class StepMoveRequest(BaseModel):
    new_position: int = Field(..., ge=1, description="1-based target position (clamped to the number of steps)", examples=[1])


@app.post(
    "/api/steps/{step_id}/move",
    summary="Move a step",
    description="Move a step to another position in its workflow, shifting the other steps accordingly.",
    tags=["steps"],
    operation_id="move_workflow_step",
    response_model=StepListResponse,
)
async def move_workflow_step(
    step_id: int = Path(..., description="Step ID", examples=[4]),
    body: StepMoveRequest = Body(...),
):
    session = SessionLocal()
    s = session.query(WorkflowStep).filter(WorkflowStep.id == step_id).first()
    steps = session.query(WorkflowStep).filter(WorkflowStep.workflow_id == s.workflow_id).order_by(WorkflowStep.position).all()
    others = [x for x in steps if x.id != s.id]
    index = min(body.new_position, len(steps)) - 1
    ordered = others[:index] + [s] + others[index:]
    _renumber(session, ordered)
    w = session.query(Workflow).filter(Workflow.id == s.workflow_id).first()
    w.updated_at = _now()
    session.commit()
    out = [_step_out(x) for x in session.query(WorkflowStep).filter(WorkflowStep.workflow_id == w.id).order_by(WorkflowStep.position).all()]
    session.close()
    return StepListResponse(workflow_id=w.id, steps=out)


# ---------------------------------------------------------------------------
# Triggers
# ---------------------------------------------------------------------------

class TriggerListResponse(BaseModel):
    triggers: List[TriggerResponse] = Field(..., description="Matching triggers")


@app.get(
    "/api/triggers",
    summary="List triggers",
    description="List triggers, optionally for one workflow and filtered by type or enabled flag.",
    tags=["triggers"],
    operation_id="list_triggers",
    response_model=TriggerListResponse,
)
async def list_triggers(
    workflow_id: Optional[int] = Query(None, description="Only triggers of this workflow", examples=[4]),
    trigger_type: Optional[TriggerType] = Query(None, description="schedule, webhook, event or manual", examples=["schedule"]),
    is_enabled: Optional[bool] = Query(None, description="Filter by enabled flag", examples=[True]),
):
    session = SessionLocal()
    q = session.query(Trigger)
    if workflow_id is not None:
        q = q.filter(Trigger.workflow_id == workflow_id)
    if trigger_type:
        q = q.filter(Trigger.trigger_type == trigger_type)
    if is_enabled is not None:
        q = q.filter(Trigger.is_enabled == is_enabled)
    out = [_trigger_out(t) for t in q.order_by(Trigger.id).all()]
    session.close()
    return TriggerListResponse(triggers=out)


class TriggerCreateRequest(BaseModel):
    name: str = Field(..., min_length=1, description="Trigger name", examples=["Weekday mornings"])
    trigger_type: TriggerType = Field(..., description="schedule, webhook, event or manual", examples=["schedule"])
    cron_expression: Optional[str] = Field(None, description="Five-field cron expression (schedule triggers)", examples=["0 9 * * 1-5"])
    timezone: Optional[str] = Field(None, description="IANA timezone for the cron expression (default UTC)", examples=["Europe/Rome"])
    webhook_path: Optional[str] = Field(None, description="Unique inbound path (webhook triggers)", examples=["/hooks/contract-renewals"])
    event_name: Optional[str] = Field(None, description="Platform event name (event triggers)", examples=["bamboohr.employee.created"])
    is_enabled: Optional[bool] = Field(None, description="Whether the trigger fires (default true)", examples=[True])


@app.post(
    "/api/workflows/{workflow_id}/triggers",
    summary="Add a trigger to a workflow",
    description="Create a schedule (cron), webhook, event or manual trigger for a workflow.",
    tags=["triggers"],
    operation_id="create_trigger",
    response_model=TriggerResponse,
)
async def create_trigger(
    workflow_id: int = Path(..., description="Workflow ID", examples=[5]),
    body: TriggerCreateRequest = Body(...),
):
    session = SessionLocal()
    w = session.query(Workflow).filter(Workflow.id == workflow_id).first()
    t = Trigger(
        workflow_id=w.id, name=body.name, trigger_type=body.trigger_type, cron_expression=body.cron_expression,
        timezone=body.timezone or "UTC", webhook_path=body.webhook_path, event_name=body.event_name,
        is_enabled=True if body.is_enabled is None else body.is_enabled, created_at=_now(),
    )
    session.add(t)
    w.updated_at = _now()
    session.commit()
    session.refresh(t)
    out = _trigger_out(t)
    session.close()
    return out


class TriggerUpdateRequest(BaseModel):
    name: Optional[str] = Field(None, min_length=1, description="New trigger name", examples=["Nightly 03:00 UTC"])
    cron_expression: Optional[str] = Field(None, description="New cron expression", examples=["0 3 * * *"])
    timezone: Optional[str] = Field(None, description="New IANA timezone", examples=["UTC"])
    webhook_path: Optional[str] = Field(None, description="New webhook path", examples=["/hooks/new-path"])
    event_name: Optional[str] = Field(None, description="New event name", examples=["incident.sev1.declared"])
    is_enabled: Optional[bool] = Field(None, description="Enable or disable the trigger", examples=[False])


@app.patch(
    "/api/triggers/{trigger_id}",
    summary="Update a trigger",
    description="Change a trigger's schedule, timezone, webhook path, event or enabled flag.",
    tags=["triggers"],
    operation_id="update_trigger",
    response_model=TriggerResponse,
)
async def update_trigger(
    trigger_id: int = Path(..., description="Trigger ID", examples=[5]),
    body: TriggerUpdateRequest = Body(...),
):
    session = SessionLocal()
    t = session.query(Trigger).filter(Trigger.id == trigger_id).first()
    data = body.model_dump(exclude_unset=True)
    for key, value in data.items():
        if value is None and key in ("name", "timezone", "is_enabled"):
            continue
        setattr(t, key, value)
    w = session.query(Workflow).filter(Workflow.id == t.workflow_id).first()
    w.updated_at = _now()
    session.commit()
    session.refresh(t)
    out = _trigger_out(t)
    session.close()
    return out


@app.delete(
    "/api/triggers/{trigger_id}",
    summary="Delete a trigger",
    description="Permanently remove a trigger from its workflow. Past runs keep their history.",
    tags=["triggers"],
    operation_id="delete_trigger",
    response_model=DeleteResponse,
)
async def delete_trigger(trigger_id: int = Path(..., description="Trigger ID", examples=[12])):
    session = SessionLocal()
    t = session.query(Trigger).filter(Trigger.id == trigger_id).first()
    name = t.name
    for r in session.query(WorkflowRun).filter(WorkflowRun.trigger_id == t.id).all():
        r.trigger_id = None
    session.delete(t)
    session.commit()
    session.close()
    return DeleteResponse(id=trigger_id, deleted=True, message=f"Trigger '{name}' deleted")


# ---------------------------------------------------------------------------
# Runs and run logs
# ---------------------------------------------------------------------------

class StepRunResponse(BaseModel):
    id: int = Field(..., description="Step run ID", examples=[39])
    run_id: int = Field(..., description="Workflow run ID", examples=[16])
    step_id: Optional[int] = Field(None, description="Step ID (null if the step was deleted)", examples=[23])
    step_name: Optional[str] = Field(None, description="Current name of the step", examples=["Create Salesforce task"])
    position: int = Field(..., description="Position of the step when the run executed", examples=[3])
    status: str = Field(..., description="pending, running, waiting, succeeded, failed or skipped", examples=["failed"])
    attempt: int = Field(..., description="Attempt number of the latest execution", examples=[1])
    output: Optional[Any] = Field(None, description="Step output payload")
    error_message: Optional[str] = Field(None, description="Error reported by the step")
    log_text: Optional[str] = Field(None, description="Execution log excerpt")
    started_at: Optional[str] = Field(None, description="Start time (ISO 8601)")
    finished_at: Optional[str] = Field(None, description="Finish time (ISO 8601)")
    model_config = ConfigDict(from_attributes=True)


class RunSummary(BaseModel):
    id: int = Field(..., description="Run ID", examples=[16])
    workflow_id: int = Field(..., description="Workflow ID", examples=[6])
    trigger_id: Optional[int] = Field(None, description="Trigger that started the run, if any", examples=[7])
    triggered_by_user_id: Optional[int] = Field(None, description="User who started the run manually", examples=[None])
    workflow_version: int = Field(..., description="Workflow version executed", examples=[3])
    status: str = Field(..., description="queued, running, waiting_approval, succeeded, failed or cancelled", examples=["failed"])
    input: Optional[Any] = Field(None, description="Run input payload")
    error_message: Optional[str] = Field(None, description="Run-level error")
    retry_of_run_id: Optional[int] = Field(None, description="Original run when this run is a retry", examples=[None])
    started_at: Optional[str] = Field(None, description="Start time (ISO 8601)")
    finished_at: Optional[str] = Field(None, description="Finish time (ISO 8601)")
    duration_ms: Optional[int] = Field(None, description="Duration in milliseconds", examples=[29300])
    created_at: Optional[str] = Field(None, description="Creation time (ISO 8601)")
    model_config = ConfigDict(from_attributes=True)


class RunListResponse(BaseModel):
    runs: List[RunSummary] = Field(..., description="Runs, newest first")
    total: int = Field(..., description="Number of runs returned", examples=[8])


class RunDetail(RunSummary):
    step_runs: List[StepRunResponse] = Field(..., description="Per-step execution log in step order")


def _run_summary(r: WorkflowRun) -> RunSummary:
    return RunSummary(
        id=r.id, workflow_id=r.workflow_id, trigger_id=r.trigger_id, triggered_by_user_id=r.triggered_by_user_id,
        workflow_version=r.workflow_version, status=r.status, input=_load_json(r.input_json), error_message=r.error_message,
        retry_of_run_id=r.retry_of_run_id, started_at=_dt(r.started_at), finished_at=_dt(r.finished_at),
        duration_ms=r.duration_ms, created_at=_dt(r.created_at),
    )


def _step_run_out(session, sr: StepRun) -> StepRunResponse:
    step_name = None
    if sr.step_id is not None:
        step = session.query(WorkflowStep).filter(WorkflowStep.id == sr.step_id).first()
        step_name = step.name if step is not None else None
    return StepRunResponse(
        id=sr.id, run_id=sr.run_id, step_id=sr.step_id, step_name=step_name, position=sr.position, status=sr.status,
        attempt=sr.attempt, output=_load_json(sr.output_json), error_message=sr.error_message, log_text=sr.log_text,
        started_at=_dt(sr.started_at), finished_at=_dt(sr.finished_at),
    )


def _run_detail(session, r: WorkflowRun) -> RunDetail:
    srs = session.query(StepRun).filter(StepRun.run_id == r.id).order_by(StepRun.position, StepRun.id).all()
    base = _run_summary(r).model_dump()
    return RunDetail(**base, step_runs=[_step_run_out(session, x) for x in srs])


@app.get(
    "/api/runs",
    summary="List workflow runs",
    description="List run history newest first, filtered by workflow, status or trigger.",
    tags=["runs"],
    operation_id="list_workflow_runs",
    response_model=RunListResponse,
)
async def list_workflow_runs(
    workflow_id: Optional[int] = Query(None, description="Only runs of this workflow", examples=[4]),
    status: Optional[RunStatus] = Query(None, description="Only runs with this status", examples=["failed"]),
    trigger_id: Optional[int] = Query(None, description="Only runs started by this trigger", examples=[5]),
    limit: int = Query(50, ge=1, le=200, description="Maximum number of runs to return", examples=[20]),
):
    session = SessionLocal()
    q = session.query(WorkflowRun)
    if workflow_id is not None:
        q = q.filter(WorkflowRun.workflow_id == workflow_id)
    if status:
        q = q.filter(WorkflowRun.status == status)
    if trigger_id is not None:
        q = q.filter(WorkflowRun.trigger_id == trigger_id)
    runs = q.order_by(WorkflowRun.created_at.desc(), WorkflowRun.id.desc()).limit(limit).all()
    out = [_run_summary(r) for r in runs]
    session.close()
    return RunListResponse(runs=out, total=len(out))


@app.get(
    "/api/runs/{run_id}",
    summary="Get a workflow run",
    description="Get one run with its per-step execution log.",
    tags=["runs"],
    operation_id="get_workflow_run",
    response_model=RunDetail,
)
async def get_workflow_run(run_id: int = Path(..., description="Run ID", examples=[16])):
    session = SessionLocal()
    r = session.query(WorkflowRun).filter(WorkflowRun.id == run_id).first()
    out = _run_detail(session, r)
    session.close()
    return out


class RunTriggerRequest(BaseModel):
    input: Dict[str, Any] = Field(..., description="Input payload made available to steps as {{input.*}}; pass {} when the workflow needs no input", examples=[{"full_name": "Rita Gomez", "email": "rita.gomez@flowpilot.io"}])
    trigger_id: Optional[int] = Field(None, description="Attribute the run to this trigger (defaults to a manual run by the current user)", examples=[2])


def _create_run(session, w: Workflow, payload: Dict[str, Any], trigger_id: Optional[int], retry_of: Optional[int]) -> WorkflowRun:
    now = _now()
    steps = session.query(WorkflowStep).filter(WorkflowStep.workflow_id == w.id).order_by(WorkflowStep.position).all()
    run = WorkflowRun(
        workflow_id=w.id,
        trigger_id=trigger_id,
        triggered_by_user_id=CURRENT_USER_ID,
        workflow_version=w.version,
        status="queued",
        input_json=json.dumps(payload),
        retry_of_run_id=retry_of,
        created_at=now,
    )
    if w.status != "active":
        run.status = "failed"
        run.error_message = f"Workflow is {w.status}; only active workflows can run. Publish or resume it first."
        run.started_at = now
        run.finished_at = now
        run.duration_ms = 0
    session.add(run)
    session.flush()
    for s in steps:
        session.add(StepRun(
            run_id=run.id, step_id=s.id, position=s.position, attempt=1,
            status="pending" if run.status == "queued" else "skipped",
        ))
    return run


@app.post(
    "/api/workflows/{workflow_id}/runs",
    summary="Run a workflow now",
    description="Start a manual run of an active workflow with an optional input payload. The run is queued with one pending step run per step. Runs of draft, paused or archived workflows are recorded as failed.",
    tags=["runs"],
    operation_id="trigger_workflow_run",
    response_model=RunDetail,
)
async def trigger_workflow_run(
    workflow_id: int = Path(..., description="Workflow ID", examples=[1]),
    body: RunTriggerRequest = Body(...),
):
    session = SessionLocal()
    w = session.query(Workflow).filter(Workflow.id == workflow_id).first()
    run = _create_run(session, w, body.input, body.trigger_id, None)
    session.commit()
    session.refresh(run)
    out = _run_detail(session, run)
    session.close()
    return out


class RunCancelRequest(BaseModel):
    reason: str = Field(..., min_length=1, description="Why the run is cancelled (recorded in the run's error message)", examples=["Duplicate request"])


@app.post(
    "/api/runs/{run_id}/cancel",
    summary="Cancel a run",
    description="Cancel a queued, running or waiting run. Unfinished steps are skipped and pending approvals are closed. Finished runs are returned unchanged.",
    tags=["runs"],
    operation_id="cancel_workflow_run",
    response_model=RunDetail,
)
async def cancel_workflow_run(
    run_id: int = Path(..., description="Run ID", examples=[18]),
    body: RunCancelRequest = Body(...),
):
    session = SessionLocal()
    r = session.query(WorkflowRun).filter(WorkflowRun.id == run_id).first()
    if r.status in ("queued", "running", "waiting_approval"):
        now = _now()
        me = session.query(User).filter(User.id == CURRENT_USER_ID).first()
        r.status = "cancelled"
        r.error_message = f"Cancelled by {me.full_name}: {body.reason}"
        r.finished_at = now
        for sr in session.query(StepRun).filter(StepRun.run_id == r.id).all():
            if sr.status in ("pending", "running", "waiting"):
                sr.status = "skipped"
                sr.log_text = (sr.log_text + "; " if sr.log_text else "") + "Run cancelled"
        for a in session.query(Approval).filter(Approval.run_id == r.id, Approval.status == "pending").all():
            a.status = "rejected"
            a.comment = "Run cancelled"
            a.decided_at = now
    session.commit()
    session.refresh(r)
    out = _run_detail(session, r)
    session.close()
    return out


@app.post(
    "/api/runs/{run_id}/retry",
    summary="Retry a run",
    description="Start a new run of the same workflow with the same input, linked to the original through retry_of_run_id.",
    tags=["runs"],
    operation_id="retry_workflow_run",
    response_model=RunDetail,
)
async def retry_workflow_run(run_id: int = Path(..., description="ID of the run to retry", examples=[7])):
    session = SessionLocal()
    original = session.query(WorkflowRun).filter(WorkflowRun.id == run_id).first()
    w = session.query(Workflow).filter(Workflow.id == original.workflow_id).first()
    run = _create_run(session, w, _load_json(original.input_json) or {}, original.trigger_id, original.id)
    session.commit()
    session.refresh(run)
    out = _run_detail(session, run)
    session.close()
    return out


class StepRunListResponse(BaseModel):
    run_id: int = Field(..., description="Run ID", examples=[16])
    step_runs: List[StepRunResponse] = Field(..., description="Step executions in order")


@app.get(
    "/api/runs/{run_id}/steps",
    summary="List step runs (run log)",
    description="List the per-step execution log of a run, optionally only steps with a given status.",
    tags=["runs"],
    operation_id="list_step_runs",
    response_model=StepRunListResponse,
)
async def list_step_runs(
    run_id: int = Path(..., description="Run ID", examples=[16]),
    status: Optional[StepRunStatus] = Query(None, description="Only step runs with this status", examples=["failed"]),
):
    session = SessionLocal()
    q = session.query(StepRun).filter(StepRun.run_id == run_id)
    if status:
        q = q.filter(StepRun.status == status)
    out = [_step_run_out(session, x) for x in q.order_by(StepRun.position, StepRun.id).all()]
    session.close()
    return StepRunListResponse(run_id=run_id, step_runs=out)


# ---------------------------------------------------------------------------
# Approvals
# ---------------------------------------------------------------------------

class ApprovalResponse(BaseModel):
    id: int = Field(..., description="Approval ID", examples=[3])
    run_id: int = Field(..., description="Run waiting on the approval", examples=[11])
    step_run_id: int = Field(..., description="Approval step run", examples=[27])
    workflow_id: int = Field(..., description="Workflow of the run", examples=[3])
    approver_user_id: int = Field(..., description="Assigned approver", examples=[1])
    status: str = Field(..., description="pending, approved or rejected", examples=["pending"])
    comment: Optional[str] = Field(None, description="Decision comment")
    requested_at: Optional[str] = Field(None, description="When approval was requested (ISO 8601)")
    decided_at: Optional[str] = Field(None, description="When the decision was made (ISO 8601)")
    model_config = ConfigDict(from_attributes=True)


class ApprovalListResponse(BaseModel):
    approvals: List[ApprovalResponse] = Field(..., description="Matching approvals")


def _approval_out(session, a: Approval) -> ApprovalResponse:
    r = session.query(WorkflowRun).filter(WorkflowRun.id == a.run_id).first()
    return ApprovalResponse(
        id=a.id, run_id=a.run_id, step_run_id=a.step_run_id, workflow_id=r.workflow_id, approver_user_id=a.approver_user_id,
        status=a.status, comment=a.comment, requested_at=_dt(a.requested_at), decided_at=_dt(a.decided_at),
    )


@app.get(
    "/api/approvals",
    summary="List approvals",
    description="List approval requests, filtered by status, approver, run or workflow.",
    tags=["approvals"],
    operation_id="list_approvals",
    response_model=ApprovalListResponse,
)
async def list_approvals(
    status: Optional[Literal["pending", "approved", "rejected"]] = Query(None, description="Only approvals with this status", examples=["pending"]),
    approver_user_id: Optional[int] = Query(None, description="Only approvals assigned to this user", examples=[1]),
    run_id: Optional[int] = Query(None, description="Only approvals for this run", examples=[11]),
    workflow_id: Optional[int] = Query(None, description="Only approvals for runs of this workflow", examples=[3]),
):
    session = SessionLocal()
    q = session.query(Approval)
    if status:
        q = q.filter(Approval.status == status)
    if approver_user_id is not None:
        q = q.filter(Approval.approver_user_id == approver_user_id)
    if run_id is not None:
        q = q.filter(Approval.run_id == run_id)
    if workflow_id is not None:
        q = q.join(WorkflowRun, WorkflowRun.id == Approval.run_id).filter(WorkflowRun.workflow_id == workflow_id)
    out = [_approval_out(session, a) for a in q.order_by(Approval.id).all()]
    session.close()
    return ApprovalListResponse(approvals=out)


class ApprovalDecisionRequest(BaseModel):
    decision: Literal["approve", "reject"] = Field(..., description="approve or reject", examples=["approve"])
    comment: Optional[str] = Field(None, description="Comment recorded with the decision", examples=["Within budget"])


@app.post(
    "/api/approvals/{approval_id}/decision",
    summary="Approve or reject",
    description="Decide a pending approval. Approving completes the approval step and resumes the run; rejecting fails the step, skips the remaining steps and fails the run. Already decided approvals are returned unchanged.",
    tags=["approvals"],
    operation_id="decide_approval",
    response_model=ApprovalResponse,
)
async def decide_approval(
    approval_id: int = Path(..., description="Approval ID", examples=[3]),
    body: ApprovalDecisionRequest = Body(...),
):
    session = SessionLocal()
    a = session.query(Approval).filter(Approval.id == approval_id).first()
    if a.status == "pending":
        now = _now()
        me = session.query(User).filter(User.id == CURRENT_USER_ID).first()
        sr = session.query(StepRun).filter(StepRun.id == a.step_run_id).first()
        r = session.query(WorkflowRun).filter(WorkflowRun.id == a.run_id).first()
        a.comment = body.comment
        a.decided_at = now
        if body.decision == "approve":
            a.status = "approved"
            sr.status = "succeeded"
            sr.finished_at = now
            sr.log_text = f"Approved by {me.full_name}" + (f": {body.comment}" if body.comment else "")
            r.status = "running"
        else:
            a.status = "rejected"
            sr.status = "failed"
            sr.finished_at = now
            sr.error_message = "Approval rejected"
            sr.log_text = f"Rejected by {me.full_name}" + (f": {body.comment}" if body.comment else "")
            for later in session.query(StepRun).filter(StepRun.run_id == r.id, StepRun.status == "pending").all():
                later.status = "skipped"
            r.status = "failed"
            r.error_message = f"Approval rejected by {me.full_name}" + (f": {body.comment}" if body.comment else "")
            r.finished_at = now
    session.commit()
    out = _approval_out(session, a)
    session.close()
    return out


# ---------------------------------------------------------------------------
# Variables and secrets
# ---------------------------------------------------------------------------

class VariableResponse(BaseModel):
    id: int = Field(..., description="Variable ID", examples=[6])
    workflow_id: Optional[int] = Field(None, description="Workflow ID, null for global variables", examples=[3])
    scope: str = Field(..., description="global or workflow", examples=["workflow"])
    key: str = Field(..., description="Variable key, referenced as {{vars.KEY}}", examples=["APPROVAL_THRESHOLD_USD"])
    value: str = Field(..., description="Variable value", examples=["5000"])
    description: Optional[str] = Field(None, description="What the variable is for")
    created_by_user_id: Optional[int] = Field(None, description="Creator user ID", examples=[4])
    updated_at: Optional[str] = Field(None, description="Last update time (ISO 8601)")
    model_config = ConfigDict(from_attributes=True)


class VariableListResponse(BaseModel):
    variables: List[VariableResponse] = Field(..., description="Matching variables")


def _variable_out(v: Variable) -> VariableResponse:
    return VariableResponse(
        id=v.id, workflow_id=v.workflow_id, scope="global" if v.workflow_id is None else "workflow", key=v.key,
        value=v.value, description=v.description, created_by_user_id=v.created_by_user_id, updated_at=_dt(v.updated_at),
    )


@app.get(
    "/api/variables",
    summary="List variables",
    description="List global and workflow-scoped variables, filtered by workflow, scope or key.",
    tags=["variables"],
    operation_id="list_variables",
    response_model=VariableListResponse,
)
async def list_variables(
    workflow_id: Optional[int] = Query(None, description="Only variables of this workflow", examples=[4]),
    scope: Optional[Literal["global", "workflow"]] = Query(None, description="global or workflow", examples=["global"]),
    key: Optional[str] = Query(None, description="Case-insensitive substring of the key", examples=["SYNC"]),
):
    session = SessionLocal()
    q = session.query(Variable)
    if workflow_id is not None:
        q = q.filter(Variable.workflow_id == workflow_id)
    if scope == "global":
        q = q.filter(Variable.workflow_id.is_(None))
    if scope == "workflow":
        q = q.filter(Variable.workflow_id.isnot(None))
    if key:
        q = q.filter(Variable.key.ilike(f"%{key}%"))
    out = [_variable_out(v) for v in q.order_by(Variable.id).all()]
    session.close()
    return VariableListResponse(variables=out)


class VariableCreateRequest(BaseModel):
    key: str = Field(..., min_length=1, description="Variable key (UPPER_SNAKE_CASE by convention)", examples=["MAX_INVOICE_AMOUNT_USD"])
    value: str = Field(..., description="Variable value (stored as text)", examples=["250000"])
    workflow_id: Optional[int] = Field(None, description="Workflow to scope the variable to; omit for a global variable", examples=[3])
    description: Optional[str] = Field(None, description="What the variable is for", examples=["Hard cap before CFO review"])


@app.post(
    "/api/variables",
    summary="Create a variable",
    description="Create a global or workflow-scoped variable. Steps reference it as {{vars.KEY}}. Do not store credentials here; use secrets.",
    tags=["variables"],
    operation_id="create_variable",
    response_model=VariableResponse,
)
async def create_variable(body: VariableCreateRequest = Body(...)):
    session = SessionLocal()
    now = _now()
    v = Variable(workflow_id=body.workflow_id, key=body.key, value=body.value, description=body.description, created_by_user_id=CURRENT_USER_ID, created_at=now, updated_at=now)
    session.add(v)
    session.commit()
    session.refresh(v)
    out = _variable_out(v)
    session.close()
    return out


class VariableUpdateRequest(BaseModel):
    value: Optional[str] = Field(None, description="New value", examples=["7500"])
    description: Optional[str] = Field(None, description="New description")
    key: Optional[str] = Field(None, min_length=1, description="Rename the key", examples=["APPROVAL_THRESHOLD_USD"])


@app.patch(
    "/api/variables/{variable_id}",
    summary="Update a variable",
    description="Change a variable's value, key or description.",
    tags=["variables"],
    operation_id="update_variable",
    response_model=VariableResponse,
)
async def update_variable(
    variable_id: int = Path(..., description="Variable ID", examples=[6]),
    body: VariableUpdateRequest = Body(...),
):
    session = SessionLocal()
    v = session.query(Variable).filter(Variable.id == variable_id).first()
    if body.value is not None:
        v.value = body.value
    if body.description is not None:
        v.description = body.description
    if body.key is not None:
        v.key = body.key
    v.updated_at = _now()
    session.commit()
    session.refresh(v)
    out = _variable_out(v)
    session.close()
    return out


@app.delete(
    "/api/variables/{variable_id}",
    summary="Delete a variable",
    description="Delete a variable. Steps that still reference it will fail to render.",
    tags=["variables"],
    operation_id="delete_variable",
    response_model=DeleteResponse,
)
async def delete_variable(variable_id: int = Path(..., description="Variable ID", examples=[9])):
    session = SessionLocal()
    v = session.query(Variable).filter(Variable.id == variable_id).first()
    key = v.key
    session.delete(v)
    session.commit()
    session.close()
    return DeleteResponse(id=variable_id, deleted=True, message=f"Variable '{key}' deleted")


class SecretResponse(BaseModel):
    id: int = Field(..., description="Secret ID", examples=[4])
    name: str = Field(..., description="Secret name, referenced as {{secrets.NAME}}", examples=["SNOWFLAKE_PASSWORD"])
    description: Optional[str] = Field(None, description="What the secret is for")
    provider: str = Field(..., description="vault, aws_secrets_manager or env", examples=["aws_secrets_manager"])
    masked_value: str = Field(..., description="Masked value showing only the last 4 characters", examples=["********0pLz"])
    version: int = Field(..., description="Secret version, incremented on rotation", examples=[6])
    created_by_user_id: Optional[int] = Field(None, description="Creator user ID", examples=[2])
    last_rotated_at: Optional[str] = Field(None, description="Last rotation time (ISO 8601)")
    created_at: Optional[str] = Field(None, description="Creation time (ISO 8601)")
    model_config = ConfigDict(from_attributes=True)


class SecretListResponse(BaseModel):
    secrets: List[SecretResponse] = Field(..., description="Matching secrets (values are never returned)")


def _secret_out(s: Secret) -> SecretResponse:
    return SecretResponse(
        id=s.id, name=s.name, description=s.description, provider=s.provider, masked_value="********" + s.value_last4,
        version=s.version, created_by_user_id=s.created_by_user_id, last_rotated_at=_dt(s.last_rotated_at), created_at=_dt(s.created_at),
    )


@app.get(
    "/api/secrets",
    summary="List secrets",
    description="List named secrets (metadata only, values are masked), optionally filtered by name or provider.",
    tags=["secrets"],
    operation_id="list_secrets",
    response_model=SecretListResponse,
)
async def list_secrets(
    name: Optional[str] = Query(None, description="Case-insensitive substring of the secret name", examples=["TOKEN"]),
    provider: Optional[Literal["vault", "aws_secrets_manager", "env"]] = Query(None, description="Only secrets from this provider", examples=["vault"]),
):
    session = SessionLocal()
    q = session.query(Secret)
    if name:
        q = q.filter(Secret.name.ilike(f"%{name}%"))
    if provider:
        q = q.filter(Secret.provider == provider)
    out = [_secret_out(s) for s in q.order_by(Secret.id).all()]
    session.close()
    return SecretListResponse(secrets=out)


class SecretCreateRequest(BaseModel):
    name: str = Field(..., min_length=1, description="Unique secret name (UPPER_SNAKE_CASE)", examples=["HUBSPOT_PRIVATE_APP_TOKEN"])
    value: str = Field(..., min_length=4, description="Secret value; stored in the provider, only the last 4 characters are kept here", examples=["pat-na1-5c1e-7a2b"])
    description: Optional[str] = Field(None, description="What the secret is for", examples=["HubSpot private app token"])
    provider: Optional[Literal["vault", "aws_secrets_manager", "env"]] = Field(None, description="Where the value is stored (default vault)", examples=["vault"])


@app.post(
    "/api/secrets",
    summary="Create a secret",
    description="Store a new named secret. The value is write-only: responses only show a masked form.",
    tags=["secrets"],
    operation_id="create_secret",
    response_model=SecretResponse,
)
async def create_secret(body: SecretCreateRequest = Body(...)):
    session = SessionLocal()
    s = Secret(
        name=body.name, description=body.description, provider=body.provider or "vault", value_last4=body.value[-4:],
        version=1, created_by_user_id=CURRENT_USER_ID, created_at=_now(),
    )
    session.add(s)
    session.commit()
    session.refresh(s)
    out = _secret_out(s)
    session.close()
    return out


class SecretRotateRequest(BaseModel):
    new_value: str = Field(..., min_length=4, description="The new secret value", examples=["sk-live-9d8c7b6a"])


@app.post(
    "/api/secrets/{secret_id}/rotate",
    summary="Rotate a secret",
    description="Replace a secret's value: bumps the version and records the rotation time.",
    tags=["secrets"],
    operation_id="rotate_secret",
    response_model=SecretResponse,
)
async def rotate_secret(
    secret_id: int = Path(..., description="Secret ID", examples=[4]),
    body: SecretRotateRequest = Body(...),
):
    session = SessionLocal()
    s = session.query(Secret).filter(Secret.id == secret_id).first()
    s.value_last4 = body.new_value[-4:]
    s.version = s.version + 1
    s.last_rotated_at = _now()
    session.commit()
    session.refresh(s)
    out = _secret_out(s)
    session.close()
    return out


if __name__ == "__main__":
    import uvicorn
    uvicorn.run(app, host=os.getenv("HOST", "127.0.0.1"), port=int(os.getenv("PORT", "8000")))
