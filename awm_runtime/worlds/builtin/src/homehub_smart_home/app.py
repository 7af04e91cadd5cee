import os
import json
from typing import List, Optional, Literal
from datetime import datetime, timezone

from fastapi import FastAPI, Query, Path, Body
from pydantic import BaseModel, Field, ConfigDict
from sqlalchemy import (
    create_engine, Column, Integer, String, Float, DateTime, ForeignKey, Text, UniqueConstraint, func
)
from sqlalchemy.orm import declarative_base, sessionmaker

engine = create_engine(os.getenv("DATABASE_PATH", "sqlite:///homehub_smart_home.db"), connect_args={"check_same_thread": False})
SessionLocal = sessionmaker(bind=engine, expire_on_commit=False)
Base = declarative_base()

CURRENT_USER_ID = 1

app = FastAPI(
    title="HomeHub Smart Home API",
    description="Manage homes, rooms, connected devices, firmware updates, scenes, automations, sensor readings, alerts and household access for the HomeHub smart home platform. The caller is always the signed-in user (user id 1).",
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
    email = Column(String, unique=True, nullable=False)
    full_name = Column(String, nullable=False)
    phone = Column(String)
    timezone = Column(String, nullable=False, default="America/Chicago")
    created_at = Column(DateTime, nullable=False, default=func.now())


class Home(Base):
    __tablename__ = "homes"
    id = Column(Integer, primary_key=True)
    owner_user_id = Column(Integer, ForeignKey("users.id", ondelete="RESTRICT"), nullable=False)
    name = Column(String, nullable=False)
    address = Column(String, nullable=False)
    city = Column(String, nullable=False)
    timezone = Column(String, nullable=False)
    away_mode = Column(Integer, nullable=False, default=0)
    created_at = Column(DateTime, nullable=False, default=func.now())
    __table_args__ = (UniqueConstraint("owner_user_id", "name"),)


class HomeMember(Base):
    __tablename__ = "home_members"
    id = Column(Integer, primary_key=True)
    home_id = Column(Integer, ForeignKey("homes.id", ondelete="CASCADE"), nullable=False)
    user_id = Column(Integer, ForeignKey("users.id", ondelete="CASCADE"), nullable=False)
    role = Column(String, nullable=False)
    can_control_locks = Column(Integer, nullable=False, default=0)
    access_expires_at = Column(DateTime)
    invited_by_user_id = Column(Integer, ForeignKey("users.id", ondelete="SET NULL"))
    joined_at = Column(DateTime, nullable=False, default=func.now())
    __table_args__ = (UniqueConstraint("home_id", "user_id"),)


class Room(Base):
    __tablename__ = "rooms"
    id = Column(Integer, primary_key=True)
    home_id = Column(Integer, ForeignKey("homes.id", ondelete="CASCADE"), nullable=False)
    name = Column(String, nullable=False)
    floor = Column(Integer, nullable=False, default=1)
    room_type = Column(String, nullable=False)
    created_at = Column(DateTime, nullable=False, default=func.now())
    __table_args__ = (UniqueConstraint("home_id", "name"),)


class Device(Base):
    __tablename__ = "devices"
    id = Column(Integer, primary_key=True)
    home_id = Column(Integer, ForeignKey("homes.id", ondelete="CASCADE"), nullable=False)
    room_id = Column(Integer, ForeignKey("rooms.id", ondelete="SET NULL"))
    name = Column(String, nullable=False)
    device_type = Column(String, nullable=False)
    manufacturer = Column(String, nullable=False)
    model = Column(String, nullable=False)
    serial_number = Column(String, unique=True, nullable=False)
    firmware_version = Column(String, nullable=False)
    state = Column(String, nullable=False)
    brightness = Column(Integer)
    target_temperature = Column(Float)
    battery_level = Column(Integer)
    is_online = Column(Integer, nullable=False, default=1)
    last_seen_at = Column(DateTime)
    installed_at = Column(DateTime, nullable=False, default=func.now())
    __table_args__ = (UniqueConstraint("home_id", "name"),)


class FirmwareRelease(Base):
    __tablename__ = "firmware_releases"
    id = Column(Integer, primary_key=True)
    manufacturer = Column(String, nullable=False)
    model = Column(String, nullable=False)
    version = Column(String, nullable=False)
    channel = Column(String, nullable=False, default="stable")
    is_critical = Column(Integer, nullable=False, default=0)
    release_notes = Column(Text)
    released_at = Column(DateTime, nullable=False)
    __table_args__ = (UniqueConstraint("model", "version"),)


class FirmwareUpdateJob(Base):
    __tablename__ = "firmware_update_jobs"
    id = Column(Integer, primary_key=True)
    device_id = Column(Integer, ForeignKey("devices.id", ondelete="CASCADE"), nullable=False)
    release_id = Column(Integer, ForeignKey("firmware_releases.id", ondelete="RESTRICT"), nullable=False)
    from_version = Column(String, nullable=False)
    to_version = Column(String, nullable=False)
    status = Column(String, nullable=False, default="scheduled")
    scheduled_for = Column(DateTime)
    started_at = Column(DateTime)
    completed_at = Column(DateTime)
    error_message = Column(Text)
    requested_by_user_id = Column(Integer, ForeignKey("users.id", ondelete="SET NULL"))
    created_at = Column(DateTime, nullable=False, default=func.now())


class Scene(Base):
    __tablename__ = "scenes"
    id = Column(Integer, primary_key=True)
    home_id = Column(Integer, ForeignKey("homes.id", ondelete="CASCADE"), nullable=False)
    name = Column(String, nullable=False)
    description = Column(Text)
    icon = Column(String)
    is_favorite = Column(Integer, nullable=False, default=0)
    created_by_user_id = Column(Integer, ForeignKey("users.id", ondelete="SET NULL"))
    last_activated_at = Column(DateTime)
    created_at = Column(DateTime, nullable=False, default=func.now())
    __table_args__ = (UniqueConstraint("home_id", "name"),)


class SceneAction(Base):
    __tablename__ = "scene_actions"
    id = Column(Integer, primary_key=True)
    scene_id = Column(Integer, ForeignKey("scenes.id", ondelete="CASCADE"), nullable=False)
    device_id = Column(Integer, ForeignKey("devices.id", ondelete="CASCADE"), nullable=False)
    action = Column(String, nullable=False)
    value = Column(Float)
    sort_order = Column(Integer, nullable=False, default=1)
    __table_args__ = (UniqueConstraint("scene_id", "device_id", "action"),)


class Automation(Base):
    __tablename__ = "automations"
    id = Column(Integer, primary_key=True)
    home_id = Column(Integer, ForeignKey("homes.id", ondelete="CASCADE"), nullable=False)
    name = Column(String, nullable=False)
    trigger_type = Column(String, nullable=False)
    trigger_time = Column(String)
    days_of_week = Column(String, nullable=False, default="Mon,Tue,Wed,Thu,Fri,Sat,Sun")
    trigger_device_id = Column(Integer, ForeignKey("devices.id", ondelete="SET NULL"))
    trigger_condition = Column(String)
    scene_id = Column(Integer, ForeignKey("scenes.id", ondelete="SET NULL"))
    action_device_id = Column(Integer, ForeignKey("devices.id", ondelete="SET NULL"))
    action = Column(String)
    action_value = Column(Float)
    notify_members = Column(Integer, nullable=False, default=0)
    is_enabled = Column(Integer, nullable=False, default=1)
    last_triggered_at = Column(DateTime)
    created_by_user_id = Column(Integer, ForeignKey("users.id", ondelete="SET NULL"))
    created_at = Column(DateTime, nullable=False, default=func.now())
    __table_args__ = (UniqueConstraint("home_id", "name"),)


class SensorReading(Base):
    __tablename__ = "sensor_readings"
    id = Column(Integer, primary_key=True)
    device_id = Column(Integer, ForeignKey("devices.id", ondelete="CASCADE"), nullable=False)
    metric = Column(String, nullable=False)
    value = Column(Float, nullable=False)
    unit = Column(String, nullable=False)
    recorded_at = Column(DateTime, nullable=False)


class DeviceEvent(Base):
    __tablename__ = "device_events"
    id = Column(Integer, primary_key=True)
    device_id = Column(Integer, ForeignKey("devices.id", ondelete="CASCADE"), nullable=False)
    user_id = Column(Integer, ForeignKey("users.id", ondelete="SET NULL"))
    event_type = Column(String, nullable=False)
    details = Column(Text)
    occurred_at = Column(DateTime, nullable=False, default=func.now())


class Alert(Base):
    __tablename__ = "alerts"
    id = Column(Integer, primary_key=True)
    home_id = Column(Integer, ForeignKey("homes.id", ondelete="CASCADE"), nullable=False)
    device_id = Column(Integer, ForeignKey("devices.id", ondelete="SET NULL"))
    severity = Column(String, nullable=False)
    title = Column(String, nullable=False)
    message = Column(Text, nullable=False)
    is_acknowledged = Column(Integer, nullable=False, default=0)
    acknowledged_by_user_id = Column(Integer, ForeignKey("users.id", ondelete="SET NULL"))
    acknowledged_at = Column(DateTime)
    created_at = Column(DateTime, nullable=False, default=func.now())


# ---------------------------------------------------------------------------
# Pydantic schemas
# ---------------------------------------------------------------------------

DeviceType = Literal["light", "thermostat", "lock", "camera", "plug", "sensor", "speaker", "blind", "doorbell"]
DeviceState = Literal["on", "off", "locked", "unlocked", "open", "closed", "idle", "heating", "cooling", "recording"]
RoomType = Literal["living_room", "bedroom", "kitchen", "bathroom", "office", "garage", "hallway", "outdoor", "basement", "dining_room", "nursery", "other"]
MemberRole = Literal["admin", "member", "guest"]
ActionName = Literal["turn_on", "turn_off", "set_brightness", "set_temperature", "lock", "unlock", "open", "close"]
TriggerType = Literal["time", "sunrise", "sunset", "sensor", "device_state", "away_mode"]
MetricName = Literal["temperature", "humidity", "motion", "co2", "power_w", "contact", "illuminance"]


class UserOut(BaseModel):
    model_config = ConfigDict(from_attributes=True)
    id: int = Field(..., description="User ID", json_schema_extra={"example": 1})
    username: str = Field(..., description="Login username", json_schema_extra={"example": "jordan.reyes"})
    email: str = Field(..., description="Email address", json_schema_extra={"example": "jordan.reyes@example.com"})
    full_name: str = Field(..., description="Full display name", json_schema_extra={"example": "Jordan Reyes"})
    phone: Optional[str] = Field(None, description="Phone number", json_schema_extra={"example": "+1-312-555-0142"})
    timezone: str = Field(..., description="IANA timezone", json_schema_extra={"example": "America/Chicago"})
    created_at: Optional[datetime] = Field(None, description="Account creation time")


class HomeOut(BaseModel):
    model_config = ConfigDict(from_attributes=True)
    id: int = Field(..., description="Home ID", json_schema_extra={"example": 1})
    owner_user_id: int = Field(..., description="User ID of the home owner", json_schema_extra={"example": 1})
    name: str = Field(..., description="Home name", json_schema_extra={"example": "Maple Street House"})
    address: str = Field(..., description="Street address", json_schema_extra={"example": "1427 Maple Street"})
    city: str = Field(..., description="City", json_schema_extra={"example": "Evanston"})
    timezone: str = Field(..., description="IANA timezone of the home", json_schema_extra={"example": "America/Chicago"})
    away_mode: bool = Field(..., description="Whether away mode is active", json_schema_extra={"example": False})
    created_at: Optional[datetime] = Field(None, description="When the home was added")


class HomeDetailOut(HomeOut):
    room_count: int = Field(..., description="Number of rooms in the home", json_schema_extra={"example": 9})
    device_count: int = Field(..., description="Number of devices in the home", json_schema_extra={"example": 19})
    online_device_count: int = Field(..., description="Number of devices currently online", json_schema_extra={"example": 15})
    open_alert_count: int = Field(..., description="Number of unacknowledged alerts", json_schema_extra={"example": 3})


class HomeUpdate(BaseModel):
    name: Optional[str] = Field(None, description="New home name", json_schema_extra={"example": "Maple Street House"})
    address: Optional[str] = Field(None, description="New street address", json_schema_extra={"example": "1427 Maple Street"})
    city: Optional[str] = Field(None, description="New city", json_schema_extra={"example": "Evanston"})
    timezone: Optional[str] = Field(None, description="New IANA timezone", json_schema_extra={"example": "America/Chicago"})
    away_mode: Optional[bool] = Field(None, description="Turn away mode on (true) or off (false)", json_schema_extra={"example": True})


class MemberOut(BaseModel):
    model_config = ConfigDict(from_attributes=True)
    id: int = Field(..., description="Membership ID", json_schema_extra={"example": 4})
    home_id: int = Field(..., description="Home ID", json_schema_extra={"example": 1})
    user_id: int = Field(..., description="Member user ID", json_schema_extra={"example": 5})
    user_full_name: Optional[str] = Field(None, description="Member's full name", json_schema_extra={"example": "Priya Shah"})
    user_email: Optional[str] = Field(None, description="Member's email", json_schema_extra={"example": "priya.shah@example.com"})
    role: str = Field(..., description="owner, admin, member or guest", json_schema_extra={"example": "guest"})
    can_control_locks: bool = Field(..., description="Whether the member may lock/unlock smart locks", json_schema_extra={"example": True})
    access_expires_at: Optional[datetime] = Field(None, description="When guest access expires (null = never)")
    invited_by_user_id: Optional[int] = Field(None, description="User who invited this member", json_schema_extra={"example": 1})
    joined_at: Optional[datetime] = Field(None, description="When the member joined")


class MemberCreate(BaseModel):
    user_id: int = Field(..., description="ID of the user to add (look it up with list_users)", json_schema_extra={"example": 7})
    role: MemberRole = Field("guest", description="Role to grant: admin, member or guest", json_schema_extra={"example": "guest"})
    can_control_locks: bool = Field(False, description="Allow the member to lock/unlock smart locks", json_schema_extra={"example": False})
    access_expires_at: Optional[datetime] = Field(None, description="Optional expiry for the access (ISO 8601)", json_schema_extra={"example": "2025-12-31T23:59:00"})


class MemberUpdate(BaseModel):
    role: Optional[MemberRole] = Field(None, description="New role: admin, member or guest", json_schema_extra={"example": "member"})
    can_control_locks: Optional[bool] = Field(None, description="Allow or revoke lock control", json_schema_extra={"example": True})
    access_expires_at: Optional[datetime] = Field(None, description="New access expiry (ISO 8601); send null to remove the expiry", json_schema_extra={"example": "2025-12-31T23:59:00"})


class RoomOut(BaseModel):
    model_config = ConfigDict(from_attributes=True)
    id: int = Field(..., description="Room ID", json_schema_extra={"example": 2})
    home_id: int = Field(..., description="Home ID", json_schema_extra={"example": 1})
    name: str = Field(..., description="Room name", json_schema_extra={"example": "Kitchen"})
    floor: int = Field(..., description="Floor number (0 = basement)", json_schema_extra={"example": 1})
    room_type: str = Field(..., description="Room type", json_schema_extra={"example": "kitchen"})
    created_at: Optional[datetime] = Field(None, description="When the room was added")


class RoomCreate(BaseModel):
    home_id: int = Field(..., description="Home the room belongs to", json_schema_extra={"example": 1})
    name: str = Field(..., description="Room name (unique within the home)", json_schema_extra={"example": "Home Office"})
    floor: int = Field(1, description="Floor number (0 = basement)", json_schema_extra={"example": 2})
    room_type: RoomType = Field("other", description="Room type", json_schema_extra={"example": "office"})


class RoomUpdate(BaseModel):
    name: Optional[str] = Field(None, description="New room name", json_schema_extra={"example": "Guest Bedroom"})
    floor: Optional[int] = Field(None, description="New floor number", json_schema_extra={"example": 2})
    room_type: Optional[RoomType] = Field(None, description="New room type", json_schema_extra={"example": "bedroom"})


class DeviceOut(BaseModel):
    model_config = ConfigDict(from_attributes=True)
    id: int = Field(..., description="Device ID", json_schema_extra={"example": 3})
    home_id: int = Field(..., description="Home ID", json_schema_extra={"example": 1})
    room_id: Optional[int] = Field(None, description="Room ID (null if unassigned)", json_schema_extra={"example": 2})
    room_name: Optional[str] = Field(None, description="Room name", json_schema_extra={"example": "Kitchen"})
    name: str = Field(..., description="Device name", json_schema_extra={"example": "Kitchen Pendant Lights"})
    device_type: str = Field(..., description="Device type", json_schema_extra={"example": "light"})
    manufacturer: str = Field(..., description="Manufacturer", json_schema_extra={"example": "Lumina"})
    model: str = Field(..., description="Hardware model", json_schema_extra={"example": "Lumina A19"})
    serial_number: str = Field(..., description="Serial number", json_schema_extra={"example": "LUM-A19-40013"})
    firmware_version: str = Field(..., description="Installed firmware version", json_schema_extra={"example": "2.3.0"})
    state: str = Field(..., description="Current state", json_schema_extra={"example": "on"})
    brightness: Optional[int] = Field(None, description="Brightness 0-100 (lights only)", json_schema_extra={"example": 100})
    target_temperature: Optional[float] = Field(None, description="Target temperature in C (thermostats only)", json_schema_extra={"example": 21.5})
    battery_level: Optional[int] = Field(None, description="Battery percentage for battery-powered devices", json_schema_extra={"example": 64})
    is_online: bool = Field(..., description="Whether the device is reachable", json_schema_extra={"example": True})
    last_seen_at: Optional[datetime] = Field(None, description="Last heartbeat")
    installed_at: Optional[datetime] = Field(None, description="When the device was installed")


class DeviceCreate(BaseModel):
    home_id: int = Field(..., description="Home to register the device in", json_schema_extra={"example": 1})
    room_id: Optional[int] = Field(None, description="Room to place the device in", json_schema_extra={"example": 2})
    name: str = Field(..., description="Device name (unique within the home)", json_schema_extra={"example": "Pantry Light"})
    device_type: DeviceType = Field(..., description="Device type", json_schema_extra={"example": "light"})
    manufacturer: str = Field(..., description="Manufacturer", json_schema_extra={"example": "Lumina"})
    model: str = Field(..., description="Hardware model", json_schema_extra={"example": "Lumina A19"})
    serial_number: str = Field(..., description="Serial number printed on the device", json_schema_extra={"example": "LUM-A19-40099"})
    firmware_version: str = Field(..., description="Firmware version installed at the factory", json_schema_extra={"example": "2.4.1"})
    battery_level: Optional[int] = Field(None, ge=0, le=100, description="Battery percentage, if battery powered", json_schema_extra={"example": 100})


class DeviceUpdate(BaseModel):
    name: Optional[str] = Field(None, description="New device name", json_schema_extra={"example": "Pantry Light"})
    room_id: Optional[int] = Field(None, description="Move the device to this room", json_schema_extra={"example": 2})


class DeviceStateCommand(BaseModel):
    state: Optional[DeviceState] = Field(None, description="Desired state. Lights/plugs/speakers: on|off; locks: locked|unlocked; blinds: open|closed; thermostats: heating|cooling|idle|off; cameras: recording|idle|off", json_schema_extra={"example": "off"})
    brightness: Optional[int] = Field(None, ge=0, le=100, description="Brightness 0-100 (lights only; a value above 0 also turns the light on)", json_schema_extra={"example": 40})
    target_temperature: Optional[float] = Field(None, description="Target temperature in Celsius (thermostats only, 5-35)", json_schema_extra={"example": 20.5})


class DeviceCommandOut(DeviceOut):
    command_status: str = Field(..., description="applied or failed", json_schema_extra={"example": "applied"})
    command_message: str = Field(..., description="Human readable result", json_schema_extra={"example": "on -> off"})


class DeviceEventOut(BaseModel):
    model_config = ConfigDict(from_attributes=True)
    id: int = Field(..., description="Event ID", json_schema_extra={"example": 12})
    device_id: int = Field(..., description="Device ID", json_schema_extra={"example": 7})
    user_id: Optional[int] = Field(None, description="User who caused the event", json_schema_extra={"example": 1})
    event_type: str = Field(..., description="Event type", json_schema_extra={"example": "state_change"})
    details: Optional[str] = Field(None, description="Event details", json_schema_extra={"example": "unlocked -> locked"})
    occurred_at: Optional[datetime] = Field(None, description="When it happened")


class FirmwareReleaseOut(BaseModel):
    model_config = ConfigDict(from_attributes=True)
    id: int = Field(..., description="Release ID", json_schema_extra={"example": 3})
    manufacturer: str = Field(..., description="Manufacturer", json_schema_extra={"example": "Lumina"})
    model: str = Field(..., description="Hardware model the release targets", json_schema_extra={"example": "Lumina A19"})
    version: str = Field(..., description="Firmware version", json_schema_extra={"example": "2.5.0"})
    channel: str = Field(..., description="stable or beta", json_schema_extra={"example": "stable"})
    is_critical: bool = Field(..., description="Security/critical release", json_schema_extra={"example": True})
    release_notes: Optional[str] = Field(None, description="Release notes")
    released_at: Optional[datetime] = Field(None, description="Release date")


class FirmwareJobOut(BaseModel):
    model_config = ConfigDict(from_attributes=True)
    id: int = Field(..., description="Job ID", json_schema_extra={"example": 13})
    device_id: int = Field(..., description="Device ID", json_schema_extra={"example": 7})
    release_id: int = Field(..., description="Firmware release ID", json_schema_extra={"example": 10})
    from_version: str = Field(..., description="Version before the update", json_schema_extra={"example": "1.8.2"})
    to_version: str = Field(..., description="Target version", json_schema_extra={"example": "1.9.0"})
    status: str = Field(..., description="scheduled, in_progress, completed, failed or cancelled", json_schema_extra={"example": "scheduled"})
    scheduled_for: Optional[datetime] = Field(None, description="When the job is scheduled to run")
    started_at: Optional[datetime] = Field(None, description="When installation started")
    completed_at: Optional[datetime] = Field(None, description="When installation finished")
    error_message: Optional[str] = Field(None, description="Failure reason", json_schema_extra={"example": "Device offline"})
    requested_by_user_id: Optional[int] = Field(None, description="User who requested the update", json_schema_extra={"example": 1})
    created_at: Optional[datetime] = Field(None, description="When the job was created")


class FirmwareJobCreate(BaseModel):
    device_id: int = Field(..., description="Device to update", json_schema_extra={"example": 7})
    release_id: int = Field(..., description="Firmware release to install (must target the device's model)", json_schema_extra={"example": 10})
    scheduled_for: Optional[datetime] = Field(None, description="When to install (ISO 8601); defaults to now", json_schema_extra={"example": "2025-06-01T03:00:00"})


class SceneActionOut(BaseModel):
    model_config = ConfigDict(from_attributes=True)
    id: int = Field(..., description="Scene action ID", json_schema_extra={"example": 30})
    scene_id: int = Field(..., description="Scene ID", json_schema_extra={"example": 8})
    device_id: int = Field(..., description="Device ID", json_schema_extra={"example": 1})
    device_name: Optional[str] = Field(None, description="Device name", json_schema_extra={"example": "Living Room Ceiling Light"})
    action: str = Field(..., description="Action", json_schema_extra={"example": "set_brightness"})
    value: Optional[float] = Field(None, description="Action value (brightness or temperature)", json_schema_extra={"example": 20})
    sort_order: int = Field(..., description="Execution order", json_schema_extra={"example": 1})


class SceneOut(BaseModel):
    model_config = ConfigDict(from_attributes=True)
    id: int = Field(..., description="Scene ID", json_schema_extra={"example": 1})
    home_id: int = Field(..., description="Home ID", json_schema_extra={"example": 1})
    name: str = Field(..., description="Scene name", json_schema_extra={"example": "Good Morning"})
    description: Optional[str] = Field(None, description="Scene description")
    icon: Optional[str] = Field(None, description="Icon name", json_schema_extra={"example": "sunrise"})
    is_favorite: bool = Field(..., description="Shown on the favorites dashboard", json_schema_extra={"example": True})
    created_by_user_id: Optional[int] = Field(None, description="Creator user ID", json_schema_extra={"example": 1})
    last_activated_at: Optional[datetime] = Field(None, description="Last activation time")
    created_at: Optional[datetime] = Field(None, description="Creation time")


class SceneDetailOut(SceneOut):
    actions: List[SceneActionOut] = Field(default_factory=list, description="Device actions in execution order")


class SceneCreate(BaseModel):
    home_id: int = Field(..., description="Home the scene belongs to", json_schema_extra={"example": 1})
    name: str = Field(..., description="Scene name (unique within the home)", json_schema_extra={"example": "Movie Night"})
    description: Optional[str] = Field(None, description="What the scene does", json_schema_extra={"example": "Dim the lights for a film"})
    icon: Optional[str] = Field(None, description="Icon name", json_schema_extra={"example": "film"})
    is_favorite: bool = Field(False, description="Pin to favorites", json_schema_extra={"example": False})


class SceneUpdate(BaseModel):
    name: Optional[str] = Field(None, description="New scene name", json_schema_extra={"example": "Movie Night"})
    description: Optional[str] = Field(None, description="New description")
    icon: Optional[str] = Field(None, description="New icon", json_schema_extra={"example": "film"})
    is_favorite: Optional[bool] = Field(None, description="Pin or unpin from favorites", json_schema_extra={"example": True})


class SceneActionCreate(BaseModel):
    device_id: int = Field(..., description="Device the action controls", json_schema_extra={"example": 1})
    action: ActionName = Field(..., description="turn_on, turn_off, set_brightness, set_temperature, lock, unlock, open or close", json_schema_extra={"example": "set_brightness"})
    value: Optional[float] = Field(None, description="Brightness (0-100) for set_brightness or Celsius for set_temperature", json_schema_extra={"example": 20})
    sort_order: Optional[int] = Field(None, description="Execution order; defaults to the end of the list", json_schema_extra={"example": 1})


class SceneActivationResult(BaseModel):
    scene_id: int = Field(..., description="Scene ID", json_schema_extra={"example": 1})
    scene_name: str = Field(..., description="Scene name", json_schema_extra={"example": "Good Night"})
    applied: int = Field(..., description="Number of actions applied", json_schema_extra={"example": 5})
    failed: int = Field(..., description="Number of actions that failed (e.g. offline devices)", json_schema_extra={"example": 0})
    results: List[DeviceCommandOut] = Field(default_factory=list, description="Per-action device results")


class AutomationOut(BaseModel):
    model_config = ConfigDict(from_attributes=True)
    id: int = Field(..., description="Automation ID", json_schema_extra={"example": 7})
    home_id: int = Field(..., description="Home ID", json_schema_extra={"example": 2})
    name: str = Field(..., description="Automation name", json_schema_extra={"example": "Evening Porch Light"})
    trigger_type: str = Field(..., description="time, sunrise, sunset, sensor, device_state or away_mode", json_schema_extra={"example": "sunset"})
    trigger_time: Optional[str] = Field(None, description="HH:MM for time triggers", json_schema_extra={"example": "22:30"})
    days_of_week: str = Field(..., description="Comma separated days", json_schema_extra={"example": "Mon,Tue,Wed,Thu,Fri"})
    trigger_device_id: Optional[int] = Field(None, description="Device whose reading/state triggers the automation", json_schema_extra={"example": 12})
    trigger_condition: Optional[str] = Field(None, description="Condition expression", json_schema_extra={"example": "humidity > 65"})
    scene_id: Optional[int] = Field(None, description="Scene to activate", json_schema_extra={"example": 2})
    action_device_id: Optional[int] = Field(None, description="Device to control directly", json_schema_extra={"example": 24})
    action: Optional[str] = Field(None, description="Direct device action", json_schema_extra={"example": "turn_on"})
    action_value: Optional[float] = Field(None, description="Value for the direct action", json_schema_extra={"example": 15})
    notify_members: bool = Field(..., description="Push a notification to household members", json_schema_extra={"example": False})
    is_enabled: bool = Field(..., description="Whether the automation is active", json_schema_extra={"example": True})
    last_triggered_at: Optional[datetime] = Field(None, description="Last time it ran")
    created_by_user_id: Optional[int] = Field(None, description="Creator user ID", json_schema_extra={"example": 1})
    created_at: Optional[datetime] = Field(None, description="Creation time")


class AutomationCreate(BaseModel):
    home_id: int = Field(..., description="Home the automation belongs to", json_schema_extra={"example": 1})
    name: str = Field(..., description="Automation name (unique within the home)", json_schema_extra={"example": "Sunset Porch Light"})
    trigger_type: TriggerType = Field(..., description="time, sunrise, sunset, sensor, device_state or away_mode", json_schema_extra={"example": "time"})
    trigger_time: Optional[str] = Field(None, pattern=r"^([01][0-9]|2[0-3]):[0-5][0-9]$", description="HH:MM (24h) for time triggers", json_schema_extra={"example": "21:00"})
    days_of_week: str = Field("Mon,Tue,Wed,Thu,Fri,Sat,Sun", description="Comma separated days the automation may run", json_schema_extra={"example": "Mon,Tue,Wed,Thu,Fri"})
    trigger_device_id: Optional[int] = Field(None, description="Triggering device for sensor/device_state triggers", json_schema_extra={"example": 14})
    trigger_condition: Optional[str] = Field(None, description="Condition expression, e.g. 'humidity > 65' or 'motion_detected'", json_schema_extra={"example": "motion_detected"})
    scene_id: Optional[int] = Field(None, description="Scene to activate when triggered", json_schema_extra={"example": 2})
    action_device_id: Optional[int] = Field(None, description="Device to control directly when triggered", json_schema_extra={"example": 5})
    action: Optional[ActionName] = Field(None, description="Direct action for action_device_id", json_schema_extra={"example": "turn_on"})
    action_value: Optional[float] = Field(None, description="Value for set_brightness / set_temperature", json_schema_extra={"example": 30})
    notify_members: bool = Field(False, description="Also notify household members", json_schema_extra={"example": False})
    is_enabled: bool = Field(True, description="Start enabled", json_schema_extra={"example": True})


class AutomationUpdate(BaseModel):
    name: Optional[str] = Field(None, description="New name", json_schema_extra={"example": "Sunset Porch Light"})
    trigger_type: Optional[TriggerType] = Field(None, description="New trigger type", json_schema_extra={"example": "sunset"})
    trigger_time: Optional[str] = Field(None, pattern=r"^([01][0-9]|2[0-3]):[0-5][0-9]$", description="New HH:MM trigger time", json_schema_extra={"example": "21:30"})
    days_of_week: Optional[str] = Field(None, description="New comma separated days", json_schema_extra={"example": "Sat,Sun"})
    trigger_condition: Optional[str] = Field(None, description="New condition expression", json_schema_extra={"example": "humidity > 70"})
    scene_id: Optional[int] = Field(None, description="New scene to activate", json_schema_extra={"example": 3})
    action_value: Optional[float] = Field(None, description="New value for the direct action", json_schema_extra={"example": 25})
    notify_members: Optional[bool] = Field(None, description="Enable/disable member notifications", json_schema_extra={"example": True})
    is_enabled: Optional[bool] = Field(None, description="Enable (true) or disable (false) the automation", json_schema_extra={"example": False})


class SensorReadingOut(BaseModel):
    model_config = ConfigDict(from_attributes=True)
    id: int = Field(..., description="Reading ID", json_schema_extra={"example": 16})
    device_id: int = Field(..., description="Device ID", json_schema_extra={"example": 13})
    metric: str = Field(..., description="Metric name", json_schema_extra={"example": "temperature"})
    value: float = Field(..., description="Measured value", json_schema_extra={"example": 25.3})
    unit: str = Field(..., description="Unit", json_schema_extra={"example": "C"})
    recorded_at: Optional[datetime] = Field(None, description="Measurement time")


class SensorSummaryOut(BaseModel):
    device_id: int = Field(..., description="Device ID", json_schema_extra={"example": 12})
    metric: str = Field(..., description="Metric", json_schema_extra={"example": "humidity"})
    count: int = Field(..., description="Number of readings", json_schema_extra={"example": 4})
    min_value: Optional[float] = Field(None, description="Minimum value", json_schema_extra={"example": 62.0})
    max_value: Optional[float] = Field(None, description="Maximum value", json_schema_extra={"example": 69.0})
    avg_value: Optional[float] = Field(None, description="Average value (2 decimals)", json_schema_extra={"example": 65.63})
    latest_value: Optional[float] = Field(None, description="Most recent value", json_schema_extra={"example": 64.0})
    latest_recorded_at: Optional[datetime] = Field(None, description="Time of the most recent reading")


class AlertOut(BaseModel):
    model_config = ConfigDict(from_attributes=True)
    id: int = Field(..., description="Alert ID", json_schema_extra={"example": 2})
    home_id: int = Field(..., description="Home ID", json_schema_extra={"example": 1})
    device_id: Optional[int] = Field(None, description="Related device ID", json_schema_extra={"example": 8})
    severity: str = Field(..., description="info, warning or critical", json_schema_extra={"example": "warning"})
    title: str = Field(..., description="Alert title", json_schema_extra={"example": "Low battery: Garage Side Door Lock"})
    message: str = Field(..., description="Alert message")
    is_acknowledged: bool = Field(..., description="Whether someone acknowledged it", json_schema_extra={"example": False})
    acknowledged_by_user_id: Optional[int] = Field(None, description="User who acknowledged it", json_schema_extra={"example": 1})
    acknowledged_at: Optional[datetime] = Field(None, description="Acknowledgement time")
    created_at: Optional[datetime] = Field(None, description="When the alert was raised")


class DeleteResult(BaseModel):
    id: int = Field(..., description="ID of the deleted object", json_schema_extra={"example": 8})
    deleted: bool = Field(..., description="True when the object was deleted", json_schema_extra={"example": True})
    message: str = Field(..., description="Result message", json_schema_extra={"example": "Automation deleted"})


# ---------------------------------------------------------------------------
# Helpers
# ---------------------------------------------------------------------------

ALLOWED_STATES = {
    "light": ["on", "off"],
    "plug": ["on", "off"],
    "speaker": ["on", "off", "idle"],
    "lock": ["locked", "unlocked"],
    "blind": ["open", "closed"],
    "thermostat": ["heating", "cooling", "idle", "off"],
    "camera": ["recording", "idle", "off"],
    "doorbell": ["idle", "off"],
    "sensor": ["idle"],
}


DEFAULT_STATES = {
    "light": "off",
    "plug": "off",
    "speaker": "idle",
    "lock": "locked",
    "blind": "closed",
    "thermostat": "idle",
    "camera": "idle",
    "doorbell": "idle",
    "sensor": "idle",
}


def device_out(session, obj, cls=DeviceOut, **extra):
    room = session.query(Room).filter(Room.id == obj.room_id).first() if obj.room_id else None
    data = DeviceOut.model_validate(obj).model_dump()
    data["room_name"] = room.name if room else None
    data.update(extra)
    return cls(**data)


def member_out(session, obj):
    user = session.query(User).filter(User.id == obj.user_id).first()
    data = MemberOut.model_validate(obj).model_dump()
    data["user_full_name"] = user.full_name if user else None
    data["user_email"] = user.email if user else None
    return MemberOut(**data)


def scene_action_out(session, obj):
    dev = session.query(Device).filter(Device.id == obj.device_id).first()
    data = SceneActionOut.model_validate(obj).model_dump()
    data["device_name"] = dev.name if dev else None
    return SceneActionOut(**data)


def apply_command(session, device, state=None, brightness=None, target_temperature=None, user_id=CURRENT_USER_ID, source="manual"):
    """Apply a state command to a device. Returns (status, message). Never raises for domain problems."""
    if not device.is_online:
        msg = f"Device '{device.name}' is offline; command not delivered"
        session.add(DeviceEvent(device_id=device.id, user_id=user_id, event_type="command_failed", details=msg, occurred_at=utcnow()))
        return "failed", msg
    allowed = ALLOWED_STATES.get(device.device_type, [])
    if state is not None and state not in allowed:
        msg = f"State '{state}' is not supported by a {device.device_type}; allowed: {', '.join(allowed)}"
        session.add(DeviceEvent(device_id=device.id, user_id=user_id, event_type="command_failed", details=msg, occurred_at=utcnow()))
        return "failed", msg
    if brightness is not None and device.device_type != "light":
        msg = "Brightness can only be set on lights"
        session.add(DeviceEvent(device_id=device.id, user_id=user_id, event_type="command_failed", details=msg, occurred_at=utcnow()))
        return "failed", msg
    if target_temperature is not None and (device.device_type != "thermostat" or target_temperature < 5 or target_temperature > 35):
        msg = "Target temperature can only be set on thermostats, between 5 and 35 C"
        session.add(DeviceEvent(device_id=device.id, user_id=user_id, event_type="command_failed", details=msg, occurred_at=utcnow()))
        return "failed", msg
    changes = []
    if state is not None and state != device.state:
        changes.append(f"{device.state} -> {state}")
        device.state = state
    if brightness is not None:
        if brightness != device.brightness:
            changes.append(f"brightness {device.brightness} -> {brightness}")
        device.brightness = brightness
        if state is None:
            new_state = "on" if brightness > 0 else "off"
            if new_state != device.state:
                changes.append(f"{device.state} -> {new_state}")
                device.state = new_state
    if target_temperature is not None:
        if device.target_temperature is None or float(target_temperature) != float(device.target_temperature):
            changes.append(f"target_temperature {device.target_temperature} -> {target_temperature}")
        device.target_temperature = float(target_temperature)
    msg = "; ".join(changes) if changes else "no change (already in requested state)"
    if source != "manual":
        msg = f"{msg} ({source})"
    session.add(DeviceEvent(device_id=device.id, user_id=user_id, event_type="scene_activated" if source.startswith("scene") else "state_change", details=msg, occurred_at=utcnow()))
    device.last_seen_at = utcnow()
    return "applied", msg


def action_to_command(action, value):
    if action == "turn_on":
        return {"state": "on"}
    if action == "turn_off":
        return {"state": "off"}
    if action == "set_brightness":
        return {"brightness": int(value if value is not None else 100)}
    if action == "set_temperature":
        return {"target_temperature": float(value if value is not None else 20)}
    if action == "lock":
        return {"state": "locked"}
    if action == "unlock":
        return {"state": "unlocked"}
    if action == "open":
        return {"state": "open"}
    return {"state": "closed"}


# ---------------------------------------------------------------------------
# Users
# ---------------------------------------------------------------------------

@app.get("/api/users/me", summary="Get the current user", description="Return the profile of the signed-in user (the account the agent acts as).", tags=["users"], operation_id="get_current_user", response_model=UserOut)
async def get_current_user():
    session = SessionLocal()
    obj = session.query(User).filter(User.id == CURRENT_USER_ID).first()
    ret = UserOut.model_validate(obj)
    session.close()
    return ret


@app.get("/api/users", summary="List or search users", description="List HomeHub users. Filter with `search` (matches full name, username or email, case-insensitive) to find a user's ID by name.", tags=["users"], operation_id="list_users", response_model=List[UserOut])
async def list_users(search: Optional[str] = Query(None, description="Text to match against full name, username or email", examples=["Priya"])):
    session = SessionLocal()
    q = session.query(User)
    if search:
        like = f"%{search}%"
        q = q.filter((User.full_name.ilike(like)) | (User.username.ilike(like)) | (User.email.ilike(like)))
    ret = [UserOut.model_validate(u) for u in q.order_by(User.id).all()]
    session.close()
    return ret


# ---------------------------------------------------------------------------
# Homes and members
# ---------------------------------------------------------------------------

@app.get("/api/homes", summary="List homes", description="List the homes the current user belongs to. Use `name` to find a home's ID by (partial) name.", tags=["homes"], operation_id="list_homes", response_model=List[HomeOut])
async def list_homes(name: Optional[str] = Query(None, description="Case-insensitive partial home name", examples=["Maple"])):
    session = SessionLocal()
    q = session.query(Home).join(HomeMember, HomeMember.home_id == Home.id).filter(HomeMember.user_id == CURRENT_USER_ID)
    if name:
        q = q.filter(Home.name.ilike(f"%{name}%"))
    ret = [HomeOut.model_validate(h) for h in q.order_by(Home.id).all()]
    session.close()
    return ret


@app.get("/api/homes/{home_id}", summary="Get a home", description="Get one home with room, device, online-device and open-alert counts.", tags=["homes"], operation_id="get_home", response_model=HomeDetailOut)
async def get_home(home_id: int = Path(..., description="Home ID", examples=[1])):
    session = SessionLocal()
    obj = session.query(Home).filter(Home.id == home_id).first()
    data = HomeOut.model_validate(obj).model_dump()
    data["room_count"] = session.query(Room).filter(Room.home_id == home_id).count()
    data["device_count"] = session.query(Device).filter(Device.home_id == home_id).count()
    data["online_device_count"] = session.query(Device).filter(Device.home_id == home_id, Device.is_online == 1).count()
    data["open_alert_count"] = session.query(Alert).filter(Alert.home_id == home_id, Alert.is_acknowledged == 0).count()
    session.close()
    return HomeDetailOut(**data)


@app.patch("/api/homes/{home_id}", summary="Update a home", description="Rename a home, change its address/timezone, or switch away mode on or off.", tags=["homes"], operation_id="update_home", response_model=HomeOut)
async def update_home(home_id: int = Path(..., description="Home ID", examples=[1]), body: HomeUpdate = Body(...)):
    session = SessionLocal()
    obj = session.query(Home).filter(Home.id == home_id).first()
    data = body.model_dump(exclude_unset=True)
    for key, value in data.items():
        if key == "away_mode":
            value = 1 if value else 0
        if value is not None:
            setattr(obj, key, value)
    session.commit()
    session.refresh(obj)
    ret = HomeOut.model_validate(obj)
    session.close()
    return ret


@app.get("/api/homes/{home_id}/members", summary="List household members", description="List the people who have access to a home, with their role, lock permission and access expiry.", tags=["members"], operation_id="list_home_members", response_model=List[MemberOut])
async def list_home_members(home_id: int = Path(..., description="Home ID", examples=[1]), role: Optional[str] = Query(None, description="Filter by role: owner, admin, member or guest", examples=["guest"])):
    session = SessionLocal()
    q = session.query(HomeMember).filter(HomeMember.home_id == home_id)
    if role:
        q = q.filter(HomeMember.role == role)
    ret = [member_out(session, m) for m in q.order_by(HomeMember.id).all()]
    session.close()
    return ret


@app.post("/api/homes/{home_id}/members", summary="Add a household member", description="Grant a user access to a home with a role (admin, member or guest), optional lock control and optional expiry.", tags=["members"], operation_id="add_home_member", response_model=MemberOut)
async def add_home_member(home_id: int = Path(..., description="Home ID", examples=[1]), body: MemberCreate = Body(...)):
    session = SessionLocal()
    obj = HomeMember(
        home_id=home_id,
        user_id=body.user_id,
        role=body.role,
        can_control_locks=1 if body.can_control_locks else 0,
        access_expires_at=body.access_expires_at,
        invited_by_user_id=CURRENT_USER_ID,
        joined_at=utcnow(),
    )
    session.add(obj)
    session.commit()
    session.refresh(obj)
    ret = member_out(session, obj)
    session.close()
    return ret


@app.patch("/api/home-members/{member_id}", summary="Update a household member", description="Change a member's role, lock permission or access expiry. Send access_expires_at=null to make access permanent.", tags=["members"], operation_id="update_home_member", response_model=MemberOut)
async def update_home_member(member_id: int = Path(..., description="Membership ID (from list_home_members)", examples=[8]), body: MemberUpdate = Body(...)):
    session = SessionLocal()
    obj = session.query(HomeMember).filter(HomeMember.id == member_id).first()
    data = body.model_dump(exclude_unset=True)
    if data.get("role") is not None:
        obj.role = data["role"]
    if data.get("can_control_locks") is not None:
        obj.can_control_locks = 1 if data["can_control_locks"] else 0
    if "access_expires_at" in data:
        obj.access_expires_at = data["access_expires_at"]
    session.commit()
    session.refresh(obj)
    ret = member_out(session, obj)
    session.close()
    return ret


@app.delete("/api/home-members/{member_id}", summary="Remove a household member", description="Revoke a member's access to a home.", tags=["members"], operation_id="remove_home_member", response_model=DeleteResult)
async def remove_home_member(member_id: int = Path(..., description="Membership ID", examples=[5])):
    session = SessionLocal()
    obj = session.query(HomeMember).filter(HomeMember.id == member_id).first()
    mid = obj.id
    session.delete(obj)
    session.commit()
    session.close()
    return DeleteResult(id=mid, deleted=True, message="Member removed from home")


# ---------------------------------------------------------------------------
# Rooms
# ---------------------------------------------------------------------------

@app.get("/api/rooms", summary="List rooms", description="List rooms, optionally only those of one home and/or matching a partial name.", tags=["rooms"], operation_id="list_rooms", response_model=List[RoomOut])
async def list_rooms(home_id: Optional[int] = Query(None, description="Only rooms of this home", examples=[1]), name: Optional[str] = Query(None, description="Case-insensitive partial room name", examples=["Kitchen"])):
    session = SessionLocal()
    q = session.query(Room)
    if home_id is not None:
        q = q.filter(Room.home_id == home_id)
    if name:
        q = q.filter(Room.name.ilike(f"%{name}%"))
    ret = [RoomOut.model_validate(r) for r in q.order_by(Room.id).all()]
    session.close()
    return ret


@app.post("/api/rooms", summary="Create a room", description="Add a room to a home.", tags=["rooms"], operation_id="create_room", response_model=RoomOut)
async def create_room(body: RoomCreate = Body(...)):
    session = SessionLocal()
    obj = Room(home_id=body.home_id, name=body.name, floor=body.floor, room_type=body.room_type, created_at=utcnow())
    session.add(obj)
    session.commit()
    session.refresh(obj)
    ret = RoomOut.model_validate(obj)
    session.close()
    return ret


@app.patch("/api/rooms/{room_id}", summary="Update a room", description="Rename a room or change its floor or type.", tags=["rooms"], operation_id="update_room", response_model=RoomOut)
async def update_room(room_id: int = Path(..., description="Room ID", examples=[2]), body: RoomUpdate = Body(...)):
    session = SessionLocal()
    obj = session.query(Room).filter(Room.id == room_id).first()
    for key, value in body.model_dump(exclude_unset=True).items():
        if value is not None:
            setattr(obj, key, value)
    session.commit()
    session.refresh(obj)
    ret = RoomOut.model_validate(obj)
    session.close()
    return ret


@app.delete("/api/rooms/{room_id}", summary="Delete a room", description="Delete a room. Devices in the room stay in the home but become unassigned.", tags=["rooms"], operation_id="delete_room", response_model=DeleteResult)
async def delete_room(room_id: int = Path(..., description="Room ID", examples=[9])):
    session = SessionLocal()
    obj = session.query(Room).filter(Room.id == room_id).first()
    rid = obj.id
    for dev in session.query(Device).filter(Device.room_id == rid).all():
        dev.room_id = None
    session.delete(obj)
    session.commit()
    session.close()
    return DeleteResult(id=rid, deleted=True, message="Room deleted; its devices are now unassigned")


# ---------------------------------------------------------------------------
# Devices
# ---------------------------------------------------------------------------

@app.get("/api/devices", summary="List devices", description="List devices with optional filters: home, room, type, model, online status and partial name. Use `name` to look a device's ID up by name.", tags=["devices"], operation_id="list_devices", response_model=List[DeviceOut])
async def list_devices(
    home_id: Optional[int] = Query(None, description="Only devices in this home", examples=[1]),
    room_id: Optional[int] = Query(None, description="Only devices in this room", examples=[2]),
    device_type: Optional[str] = Query(None, description="light, thermostat, lock, camera, plug, sensor, speaker, blind or doorbell", examples=["light"]),
    model: Optional[str] = Query(None, description="Case-insensitive partial hardware model", examples=["Lumina A19"]),
    name: Optional[str] = Query(None, description="Case-insensitive partial device name", examples=["Front Door"]),
    is_online: Optional[bool] = Query(None, description="true = only online devices, false = only offline devices", examples=[False]),
):
    session = SessionLocal()
    q = session.query(Device)
    if home_id is not None:
        q = q.filter(Device.home_id == home_id)
    if room_id is not None:
        q = q.filter(Device.room_id == room_id)
    if device_type:
        q = q.filter(Device.device_type == device_type)
    if model:
        q = q.filter(Device.model.ilike(f"%{model}%"))
    if name:
        q = q.filter(Device.name.ilike(f"%{name}%"))
    if is_online is not None:
        q = q.filter(Device.is_online == (1 if is_online else 0))
    ret = [device_out(session, d) for d in q.order_by(Device.id).all()]
    session.close()
    return ret


@app.get("/api/devices/{device_id}", summary="Get a device", description="Get one device with its current state, firmware and connectivity.", tags=["devices"], operation_id="get_device", response_model=DeviceOut)
async def get_device(device_id: int = Path(..., description="Device ID", examples=[7])):
    session = SessionLocal()
    obj = session.query(Device).filter(Device.id == device_id).first()
    ret = device_out(session, obj)
    session.close()
    return ret


@app.post("/api/devices", summary="Register a device", description="Pair a new device with a home. The device starts online in its default state.", tags=["devices"], operation_id="register_device", response_model=DeviceOut)
async def register_device(body: DeviceCreate = Body(...)):
    session = SessionLocal()
    default_state = DEFAULT_STATES.get(body.device_type, "idle")
    obj = Device(
        home_id=body.home_id,
        room_id=body.room_id,
        name=body.name,
        device_type=body.device_type,
        manufacturer=body.manufacturer,
        model=body.model,
        serial_number=body.serial_number,
        firmware_version=body.firmware_version,
        state=default_state,
        brightness=100 if body.device_type == "light" else None,
        target_temperature=20.0 if body.device_type == "thermostat" else None,
        battery_level=body.battery_level,
        is_online=1,
        last_seen_at=utcnow(),
        installed_at=utcnow(),
    )
    session.add(obj)
    session.commit()
    session.refresh(obj)
    ret = device_out(session, obj)
    session.close()
    return ret


@app.patch("/api/devices/{device_id}", summary="Rename or move a device", description="Change a device's name or move it to another room. Use set_device_state to control it.", tags=["devices"], operation_id="update_device", response_model=DeviceOut)
async def update_device(device_id: int = Path(..., description="Device ID", examples=[5]), body: DeviceUpdate = Body(...)):
    session = SessionLocal()
    obj = session.query(Device).filter(Device.id == device_id).first()
    for key, value in body.model_dump(exclude_unset=True).items():
        if value is not None:
            setattr(obj, key, value)
    session.commit()
    session.refresh(obj)
    ret = device_out(session, obj)
    session.close()
    return ret


@app.delete("/api/devices/{device_id}", summary="Remove a device", description="Unpair a device from its home. Its readings, events and scene actions are deleted too.", tags=["devices"], operation_id="remove_device", response_model=DeleteResult)
async def remove_device(device_id: int = Path(..., description="Device ID", examples=[19])):
    session = SessionLocal()
    obj = session.query(Device).filter(Device.id == device_id).first()
    did = obj.id
    session.query(SceneAction).filter(SceneAction.device_id == did).delete()
    session.query(SensorReading).filter(SensorReading.device_id == did).delete()
    session.query(DeviceEvent).filter(DeviceEvent.device_id == did).delete()
    session.query(FirmwareUpdateJob).filter(FirmwareUpdateJob.device_id == did).delete()
    for a in session.query(Automation).filter((Automation.trigger_device_id == did) | (Automation.action_device_id == did)).all():
        if a.trigger_device_id == did:
            a.trigger_device_id = None
        if a.action_device_id == did:
            a.action_device_id = None
    for al in session.query(Alert).filter(Alert.device_id == did).all():
        al.device_id = None
    session.delete(obj)
    session.commit()
    session.close()
    return DeleteResult(id=did, deleted=True, message="Device removed")


@app.post("/api/devices/{device_id}/state", summary="Control a device", description="Send a command to a device: set its state (on/off, locked/unlocked, open/closed, heating/cooling/idle/off), brightness (lights) or target temperature (thermostats). Offline devices and unsupported commands are reported with command_status='failed' and leave the device unchanged.", tags=["devices"], operation_id="set_device_state", response_model=DeviceCommandOut)
async def set_device_state(device_id: int = Path(..., description="Device ID", examples=[6]), body: DeviceStateCommand = Body(...)):
    session = SessionLocal()
    obj = session.query(Device).filter(Device.id == device_id).first()
    status, msg = apply_command(session, obj, state=body.state, brightness=body.brightness, target_temperature=body.target_temperature)
    session.commit()
    session.refresh(obj)
    ret = device_out(session, obj, DeviceCommandOut, command_status=status, command_message=msg)
    session.close()
    return ret


@app.get("/api/devices/{device_id}/events", summary="List device events", description="Activity log for a device (state changes, failed commands, firmware updates, connectivity), newest first.", tags=["devices"], operation_id="list_device_events", response_model=List[DeviceEventOut])
async def list_device_events(device_id: int = Path(..., description="Device ID", examples=[7]), event_type: Optional[str] = Query(None, description="Filter by event type", examples=["state_change"]), limit: int = Query(50, ge=1, le=200, description="Maximum number of events", examples=[20])):
    session = SessionLocal()
    q = session.query(DeviceEvent).filter(DeviceEvent.device_id == device_id)
    if event_type:
        q = q.filter(DeviceEvent.event_type == event_type)
    ret = [DeviceEventOut.model_validate(e) for e in q.order_by(DeviceEvent.occurred_at.desc(), DeviceEvent.id.desc()).limit(limit).all()]
    session.close()
    return ret


# ---------------------------------------------------------------------------
# Firmware
# ---------------------------------------------------------------------------

@app.get("/api/firmware-releases", summary="List firmware releases", description="List published firmware releases, newest first. Filter by hardware model (partial match), manufacturer or channel (stable/beta).", tags=["firmware"], operation_id="list_firmware_releases", response_model=List[FirmwareReleaseOut])
async def list_firmware_releases(
    model: Optional[str] = Query(None, description="Case-insensitive partial model name", examples=["Lumina A19"]),
    manufacturer: Optional[str] = Query(None, description="Manufacturer", examples=["Boltline"]),
    channel: Optional[str] = Query(None, description="stable or beta", examples=["stable"]),
):
    session = SessionLocal()
    q = session.query(FirmwareRelease)
    if model:
        q = q.filter(FirmwareRelease.model.ilike(f"%{model}%"))
    if manufacturer:
        q = q.filter(FirmwareRelease.manufacturer.ilike(f"%{manufacturer}%"))
    if channel:
        q = q.filter(FirmwareRelease.channel == channel)
    ret = [FirmwareReleaseOut.model_validate(r) for r in q.order_by(FirmwareRelease.released_at.desc(), FirmwareRelease.id.desc()).all()]
    session.close()
    return ret


@app.get("/api/firmware-jobs", summary="List firmware update jobs", description="List firmware update jobs, newest first, optionally filtered by device, home or status.", tags=["firmware"], operation_id="list_firmware_update_jobs", response_model=List[FirmwareJobOut])
async def list_firmware_update_jobs(
    device_id: Optional[int] = Query(None, description="Only jobs for this device", examples=[7]),
    home_id: Optional[int] = Query(None, description="Only jobs for devices in this home", examples=[1]),
    status: Optional[str] = Query(None, description="scheduled, in_progress, completed, failed or cancelled", examples=["scheduled"]),
):
    session = SessionLocal()
    q = session.query(FirmwareUpdateJob)
    if device_id is not None:
        q = q.filter(FirmwareUpdateJob.device_id == device_id)
    if home_id is not None:
        q = q.join(Device, Device.id == FirmwareUpdateJob.device_id).filter(Device.home_id == home_id)
    if status:
        q = q.filter(FirmwareUpdateJob.status == status)
    ret = [FirmwareJobOut.model_validate(j) for j in q.order_by(FirmwareUpdateJob.id.desc()).all()]
    session.close()
    return ret


@app.post("/api/firmware-jobs", summary="Schedule a firmware update", description="Create a firmware update job that will install a release on a device. The release must target the device's model; otherwise the job is recorded as failed. Use run_firmware_update_job to install it immediately.", tags=["firmware"], operation_id="schedule_firmware_update", response_model=FirmwareJobOut)
async def schedule_firmware_update(body: FirmwareJobCreate = Body(...)):
    session = SessionLocal()
    device = session.query(Device).filter(Device.id == body.device_id).first()
    release = session.query(FirmwareRelease).filter(FirmwareRelease.id == body.release_id).first()
    status = "scheduled"
    error = None
    if release.model != device.model:
        status = "failed"
        error = f"Release targets model '{release.model}' but device is '{device.model}'"
    elif release.version == device.firmware_version:
        status = "failed"
        error = f"Device already runs firmware {release.version}"
    obj = FirmwareUpdateJob(
        device_id=device.id,
        release_id=release.id,
        from_version=device.firmware_version,
        to_version=release.version,
        status=status,
        scheduled_for=body.scheduled_for or utcnow(),
        error_message=error,
        requested_by_user_id=CURRENT_USER_ID,
        created_at=utcnow(),
    )
    session.add(obj)
    session.commit()
    session.refresh(obj)
    ret = FirmwareJobOut.model_validate(obj)
    session.close()
    return ret


@app.post("/api/firmware-jobs/{job_id}/run", summary="Run a firmware update job now", description="Install a scheduled firmware update immediately. Succeeds (status 'completed', device firmware updated) when the device is online and, for locks, its battery is above 20 percent; otherwise the job is marked 'failed' with a reason. Jobs that are not 'scheduled' are returned unchanged.", tags=["firmware"], operation_id="run_firmware_update_job", response_model=FirmwareJobOut)
async def run_firmware_update_job(job_id: int = Path(..., description="Firmware update job ID", examples=[13])):
    session = SessionLocal()
    job = session.query(FirmwareUpdateJob).filter(FirmwareUpdateJob.id == job_id).first()
    if job.status == "scheduled":
        device = session.query(Device).filter(Device.id == job.device_id).first()
        now = utcnow()
        job.started_at = now
        job.completed_at = now
        if not device.is_online:
            job.status = "failed"
            job.error_message = "Device offline"
            session.add(DeviceEvent(device_id=device.id, user_id=CURRENT_USER_ID, event_type="command_failed", details=f"Firmware {job.to_version} install failed: device offline", occurred_at=now))
        elif device.device_type == "lock" and device.battery_level is not None and device.battery_level <= 20:
            job.status = "failed"
            job.error_message = f"Battery too low to install lock firmware ({device.battery_level} percent, requires above 20 percent)"
            session.add(DeviceEvent(device_id=device.id, user_id=CURRENT_USER_ID, event_type="command_failed", details=job.error_message, occurred_at=now))
        else:
            job.status = "completed"
            job.from_version = device.firmware_version
            device.firmware_version = job.to_version
            device.last_seen_at = now
            session.add(DeviceEvent(device_id=device.id, user_id=CURRENT_USER_ID, event_type="firmware_update", details=f"{job.from_version} -> {job.to_version}", occurred_at=now))
        session.commit()
        session.refresh(job)
    ret = FirmwareJobOut.model_validate(job)
    session.close()
    return ret


@app.post("/api/firmware-jobs/{job_id}/cancel", summary="Cancel a firmware update job", description="Cancel a scheduled firmware update job. Jobs that already ran are returned unchanged.", tags=["firmware"], operation_id="cancel_firmware_update_job", response_model=FirmwareJobOut)
async def cancel_firmware_update_job(job_id: int = Path(..., description="Firmware update job ID", examples=[7])):
    session = SessionLocal()
    job = session.query(FirmwareUpdateJob).filter(FirmwareUpdateJob.id == job_id).first()
    if job.status in ("scheduled", "in_progress"):
        job.status = "cancelled"
        session.commit()
        session.refresh(job)
    ret = FirmwareJobOut.model_validate(job)
    session.close()
    return ret


# ---------------------------------------------------------------------------
# Scenes
# ---------------------------------------------------------------------------

@app.get("/api/scenes", summary="List scenes", description="List scenes, optionally for one home and/or matching a partial name.", tags=["scenes"], operation_id="list_scenes", response_model=List[SceneOut])
async def list_scenes(home_id: Optional[int] = Query(None, description="Only scenes of this home", examples=[1]), name: Optional[str] = Query(None, description="Case-insensitive partial scene name", examples=["Night"])):
    session = SessionLocal()
    q = session.query(Scene)
    if home_id is not None:
        q = q.filter(Scene.home_id == home_id)
    if name:
        q = q.filter(Scene.name.ilike(f"%{name}%"))
    ret = [SceneOut.model_validate(s) for s in q.order_by(Scene.id).all()]
    session.close()
    return ret


@app.get("/api/scenes/{scene_id}", summary="Get a scene", description="Get a scene with its ordered device actions.", tags=["scenes"], operation_id="get_scene", response_model=SceneDetailOut)
async def get_scene(scene_id: int = Path(..., description="Scene ID", examples=[2])):
    session = SessionLocal()
    obj = session.query(Scene).filter(Scene.id == scene_id).first()
    data = SceneOut.model_validate(obj).model_dump()
    data["actions"] = [scene_action_out(session, a) for a in session.query(SceneAction).filter(SceneAction.scene_id == scene_id).order_by(SceneAction.sort_order, SceneAction.id).all()]
    session.close()
    return SceneDetailOut(**data)


@app.post("/api/scenes", summary="Create a scene", description="Create an empty scene in a home. Add device actions with add_scene_action.", tags=["scenes"], operation_id="create_scene", response_model=SceneOut)
async def create_scene(body: SceneCreate = Body(...)):
    session = SessionLocal()
    obj = Scene(home_id=body.home_id, name=body.name, description=body.description, icon=body.icon, is_favorite=1 if body.is_favorite else 0, created_by_user_id=CURRENT_USER_ID, created_at=utcnow())
    session.add(obj)
    session.commit()
    session.refresh(obj)
    ret = SceneOut.model_validate(obj)
    session.close()
    return ret


@app.patch("/api/scenes/{scene_id}", summary="Update a scene", description="Rename a scene, change its description or icon, or pin/unpin it as a favorite.", tags=["scenes"], operation_id="update_scene", response_model=SceneOut)
async def update_scene(scene_id: int = Path(..., description="Scene ID", examples=[4]), body: SceneUpdate = Body(...)):
    session = SessionLocal()
    obj = session.query(Scene).filter(Scene.id == scene_id).first()
    for key, value in body.model_dump(exclude_unset=True).items():
        if key == "is_favorite" and value is not None:
            value = 1 if value else 0
        if value is not None:
            setattr(obj, key, value)
    session.commit()
    session.refresh(obj)
    ret = SceneOut.model_validate(obj)
    session.close()
    return ret


@app.delete("/api/scenes/{scene_id}", summary="Delete a scene", description="Delete a scene and its actions. Automations that used it stop activating a scene.", tags=["scenes"], operation_id="delete_scene", response_model=DeleteResult)
async def delete_scene(scene_id: int = Path(..., description="Scene ID", examples=[4])):
    session = SessionLocal()
    obj = session.query(Scene).filter(Scene.id == scene_id).first()
    sid = obj.id
    session.query(SceneAction).filter(SceneAction.scene_id == sid).delete()
    for a in session.query(Automation).filter(Automation.scene_id == sid).all():
        a.scene_id = None
    session.delete(obj)
    session.commit()
    session.close()
    return DeleteResult(id=sid, deleted=True, message="Scene deleted")


@app.post("/api/scenes/{scene_id}/actions", summary="Add an action to a scene", description="Add a device action (turn_on, turn_off, set_brightness, set_temperature, lock, unlock, open, close) to a scene.", tags=["scenes"], operation_id="add_scene_action", response_model=SceneActionOut)
async def add_scene_action(scene_id: int = Path(..., description="Scene ID", examples=[8]), body: SceneActionCreate = Body(...)):
    session = SessionLocal()
    order = body.sort_order
    if order is None:
        order = session.query(SceneAction).filter(SceneAction.scene_id == scene_id).count() + 1
    obj = SceneAction(scene_id=scene_id, device_id=body.device_id, action=body.action, value=body.value, sort_order=order)
    session.add(obj)
    session.commit()
    session.refresh(obj)
    ret = scene_action_out(session, obj)
    session.close()
    return ret


@app.delete("/api/scene-actions/{action_id}", summary="Remove a scene action", description="Remove one device action from a scene.", tags=["scenes"], operation_id="remove_scene_action", response_model=DeleteResult)
async def remove_scene_action(action_id: int = Path(..., description="Scene action ID (from get_scene)", examples=[18])):
    session = SessionLocal()
    obj = session.query(SceneAction).filter(SceneAction.id == action_id).first()
    aid = obj.id
    session.delete(obj)
    session.commit()
    session.close()
    return DeleteResult(id=aid, deleted=True, message="Scene action removed")


@app.post("/api/scenes/{scene_id}/activate", summary="Activate a scene", description="Run every action of a scene now, in order. Offline devices are skipped and counted as failed.", tags=["scenes"], operation_id="activate_scene", response_model=SceneActivationResult)
async def activate_scene(scene_id: int = Path(..., description="Scene ID", examples=[2])):
    session = SessionLocal()
    scene = session.query(Scene).filter(Scene.id == scene_id).first()
    actions = session.query(SceneAction).filter(SceneAction.scene_id == scene_id).order_by(SceneAction.sort_order, SceneAction.id).all()
    results = []
    applied = 0
    failed = 0
    for a in actions:
        device = session.query(Device).filter(Device.id == a.device_id).first()
        status, msg = apply_command(session, device, source=f"scene {scene.name}", **action_to_command(a.action, a.value))
        if status == "applied":
            applied += 1
        else:
            failed += 1
        session.flush()
        results.append(device_out(session, device, DeviceCommandOut, command_status=status, command_message=msg))
    scene.last_activated_at = utcnow()
    session.commit()
    ret = SceneActivationResult(scene_id=scene.id, scene_name=scene.name, applied=applied, failed=failed, results=results)
    session.close()
    return ret


# ---------------------------------------------------------------------------
# Automations
# ---------------------------------------------------------------------------

@app.get("/api/automations", summary="List automations", description="List automations (schedules and triggers), optionally for one home, by partial name, or by enabled state.", tags=["automations"], operation_id="list_automations", response_model=List[AutomationOut])
async def list_automations(
    home_id: Optional[int] = Query(None, description="Only automations of this home", examples=[2]),
    name: Optional[str] = Query(None, description="Case-insensitive partial automation name", examples=["Porch"]),
    is_enabled: Optional[bool] = Query(None, description="Filter by enabled (true) or disabled (false)", examples=[True]),
):
    session = SessionLocal()
    q = session.query(Automation)
    if home_id is not None:
        q = q.filter(Automation.home_id == home_id)
    if name:
        q = q.filter(Automation.name.ilike(f"%{name}%"))
    if is_enabled is not None:
        q = q.filter(Automation.is_enabled == (1 if is_enabled else 0))
    ret = [AutomationOut.model_validate(a) for a in q.order_by(Automation.id).all()]
    session.close()
    return ret


@app.get("/api/automations/{automation_id}", summary="Get an automation", description="Get one automation with its trigger and action.", tags=["automations"], operation_id="get_automation", response_model=AutomationOut)
async def get_automation(automation_id: int = Path(..., description="Automation ID", examples=[7])):
    session = SessionLocal()
    obj = session.query(Automation).filter(Automation.id == automation_id).first()
    ret = AutomationOut.model_validate(obj)
    session.close()
    return ret


@app.post("/api/automations", summary="Create an automation", description="Create a schedule or trigger-based automation that activates a scene and/or performs a direct device action.", tags=["automations"], operation_id="create_automation", response_model=AutomationOut)
async def create_automation(body: AutomationCreate = Body(...)):
    session = SessionLocal()
    obj = Automation(
        home_id=body.home_id,
        name=body.name,
        trigger_type=body.trigger_type,
        trigger_time=body.trigger_time,
        days_of_week=body.days_of_week,
        trigger_device_id=body.trigger_device_id,
        trigger_condition=body.trigger_condition,
        scene_id=body.scene_id,
        action_device_id=body.action_device_id,
        action=body.action,
        action_value=body.action_value,
        notify_members=1 if body.notify_members else 0,
        is_enabled=1 if body.is_enabled else 0,
        created_by_user_id=CURRENT_USER_ID,
        created_at=utcnow(),
    )
    session.add(obj)
    session.commit()
    session.refresh(obj)
    ret = AutomationOut.model_validate(obj)
    session.close()
    return ret


@app.patch("/api/automations/{automation_id}", summary="Update an automation", description="Change an automation's schedule, condition, scene or value, or enable/disable it.", tags=["automations"], operation_id="update_automation", response_model=AutomationOut)
async def update_automation(automation_id: int = Path(..., description="Automation ID", examples=[7]), body: AutomationUpdate = Body(...)):
    session = SessionLocal()
    obj = session.query(Automation).filter(Automation.id == automation_id).first()
    for key, value in body.model_dump(exclude_unset=True).items():
        if key in ("notify_members", "is_enabled") and value is not None:
            value = 1 if value else 0
        if value is not None:
            setattr(obj, key, value)
    session.commit()
    session.refresh(obj)
    ret = AutomationOut.model_validate(obj)
    session.close()
    return ret


@app.delete("/api/automations/{automation_id}", summary="Delete an automation", description="Permanently delete an automation.", tags=["automations"], operation_id="delete_automation", response_model=DeleteResult)
async def delete_automation(automation_id: int = Path(..., description="Automation ID", examples=[8])):
    session = SessionLocal()
    obj = session.query(Automation).filter(Automation.id == automation_id).first()
    aid = obj.id
    session.delete(obj)
    session.commit()
    session.close()
    return DeleteResult(id=aid, deleted=True, message="Automation deleted")


# ---------------------------------------------------------------------------
# Sensor readings
# ---------------------------------------------------------------------------

@app.get("/api/sensor-readings", summary="List sensor readings", description="List stored sensor readings for a device (newest first), optionally for one metric.", tags=["sensors"], operation_id="list_sensor_readings", response_model=List[SensorReadingOut])
async def list_sensor_readings(
    device_id: int = Query(..., description="Device ID", examples=[11]),
    metric: Optional[str] = Query(None, description="temperature, humidity, motion, co2, power_w, contact or illuminance", examples=["temperature"]),
    limit: int = Query(100, ge=1, le=500, description="Maximum number of readings", examples=[50]),
):
    session = SessionLocal()
    q = session.query(SensorReading).filter(SensorReading.device_id == device_id)
    if metric:
        q = q.filter(SensorReading.metric == metric)
    ret = [SensorReadingOut.model_validate(r) for r in q.order_by(SensorReading.recorded_at.desc(), SensorReading.id.desc()).limit(limit).all()]
    session.close()
    return ret


@app.get("/api/devices/{device_id}/sensor-summary", summary="Summarize sensor readings", description="Min, max, average and latest value of one metric for a device across all stored readings.", tags=["sensors"], operation_id="get_sensor_summary", response_model=SensorSummaryOut)
async def get_sensor_summary(device_id: int = Path(..., description="Device ID", examples=[12]), metric: MetricName = Query(..., description="Metric to summarize", examples=["humidity"])):
    session = SessionLocal()
    rows = session.query(SensorReading).filter(SensorReading.device_id == device_id, SensorReading.metric == metric).order_by(SensorReading.recorded_at.desc(), SensorReading.id.desc()).all()
    values = [r.value for r in rows]
    ret = SensorSummaryOut(
        device_id=device_id,
        metric=metric,
        count=len(values),
        min_value=min(values) if values else None,
        max_value=max(values) if values else None,
        avg_value=round(sum(values) / len(values), 2) if values else None,
        latest_value=rows[0].value if rows else None,
        latest_recorded_at=rows[0].recorded_at if rows else None,
    )
    session.close()
    return ret


# ---------------------------------------------------------------------------
# Alerts
# ---------------------------------------------------------------------------

@app.get("/api/alerts", summary="List alerts", description="List home alerts (offline devices, low batteries, firmware, security), newest first.", tags=["alerts"], operation_id="list_alerts", response_model=List[AlertOut])
async def list_alerts(
    home_id: Optional[int] = Query(None, description="Only alerts of this home", examples=[1]),
    severity: Optional[str] = Query(None, description="info, warning or critical", examples=["warning"]),
    is_acknowledged: Optional[bool] = Query(None, description="Filter by acknowledged state", examples=[False]),
):
    session = SessionLocal()
    q = session.query(Alert)
    if home_id is not None:
        q = q.filter(Alert.home_id == home_id)
    if severity:
        q = q.filter(Alert.severity == severity)
    if is_acknowledged is not None:
        q = q.filter(Alert.is_acknowledged == (1 if is_acknowledged else 0))
    ret = [AlertOut.model_validate(a) for a in q.order_by(Alert.created_at.desc(), Alert.id.desc()).all()]
    session.close()
    return ret


@app.post("/api/alerts/{alert_id}/acknowledge", summary="Acknowledge an alert", description="Mark an alert as acknowledged by the current user.", tags=["alerts"], operation_id="acknowledge_alert", response_model=AlertOut)
async def acknowledge_alert(alert_id: int = Path(..., description="Alert ID", examples=[2])):
    session = SessionLocal()
    obj = session.query(Alert).filter(Alert.id == alert_id).first()
    if not obj.is_acknowledged:
        obj.is_acknowledged = 1
        obj.acknowledged_by_user_id = CURRENT_USER_ID
        obj.acknowledged_at = utcnow()
        session.commit()
        session.refresh(obj)
    ret = AlertOut.model_validate(obj)
    session.close()
    return ret


if __name__ == "__main__":
    import uvicorn
    uvicorn.run(app, host=os.getenv("HOST", "127.0.0.1"), port=int(os.getenv("PORT", "8000")))
