CREATE TABLE users (
    id INTEGER PRIMARY KEY,
    username TEXT NOT NULL UNIQUE,
    email TEXT NOT NULL UNIQUE,
    full_name TEXT NOT NULL,
    phone TEXT,
    timezone TEXT NOT NULL DEFAULT 'America/Chicago',
    created_at DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP
);

CREATE TABLE homes (
    id INTEGER PRIMARY KEY,
    owner_user_id INTEGER NOT NULL REFERENCES users(id) ON DELETE RESTRICT,
    name TEXT NOT NULL,
    address TEXT NOT NULL,
    city TEXT NOT NULL,
    timezone TEXT NOT NULL,
    away_mode INTEGER NOT NULL DEFAULT 0 CHECK (away_mode IN (0, 1)),
    created_at DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,
    UNIQUE (owner_user_id, name)
);

CREATE TABLE home_members (
    id INTEGER PRIMARY KEY,
    home_id INTEGER NOT NULL REFERENCES homes(id) ON DELETE CASCADE,
    user_id INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    role TEXT NOT NULL CHECK (role IN ('owner', 'admin', 'member', 'guest')),
    can_control_locks INTEGER NOT NULL DEFAULT 0 CHECK (can_control_locks IN (0, 1)),
    access_expires_at DATETIME,
    invited_by_user_id INTEGER REFERENCES users(id) ON DELETE SET NULL,
    joined_at DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,
    UNIQUE (home_id, user_id)
);

CREATE TABLE rooms (
    id INTEGER PRIMARY KEY,
    home_id INTEGER NOT NULL REFERENCES homes(id) ON DELETE CASCADE,
    name TEXT NOT NULL,
    floor INTEGER NOT NULL DEFAULT 1,
    room_type TEXT NOT NULL CHECK (room_type IN ('living_room', 'bedroom', 'kitchen', 'bathroom', 'office', 'garage', 'hallway', 'outdoor', 'basement', 'dining_room', 'nursery', 'other')),
    created_at DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,
    UNIQUE (home_id, name)
);

CREATE TABLE devices (
    id INTEGER PRIMARY KEY,
    home_id INTEGER NOT NULL REFERENCES homes(id) ON DELETE CASCADE,
    room_id INTEGER REFERENCES rooms(id) ON DELETE SET NULL,
    name TEXT NOT NULL,
    device_type TEXT NOT NULL CHECK (device_type IN ('light', 'thermostat', 'lock', 'camera', 'plug', 'sensor', 'speaker', 'blind', 'doorbell')),
    manufacturer TEXT NOT NULL,
    model TEXT NOT NULL,
    serial_number TEXT NOT NULL UNIQUE,
    firmware_version TEXT NOT NULL,
    state TEXT NOT NULL CHECK (state IN ('on', 'off', 'locked', 'unlocked', 'open', 'closed', 'idle', 'heating', 'cooling', 'recording')),
    brightness INTEGER CHECK (brightness IS NULL OR (brightness BETWEEN 0 AND 100)),
    target_temperature REAL,
    battery_level INTEGER CHECK (battery_level IS NULL OR (battery_level BETWEEN 0 AND 100)),
    is_online INTEGER NOT NULL DEFAULT 1 CHECK (is_online IN (0, 1)),
    last_seen_at DATETIME,
    installed_at DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,
    UNIQUE (home_id, name)
);

CREATE TABLE firmware_releases (
    id INTEGER PRIMARY KEY,
    manufacturer TEXT NOT NULL,
    model TEXT NOT NULL,
    version TEXT NOT NULL,
    channel TEXT NOT NULL DEFAULT 'stable' CHECK (channel IN ('stable', 'beta')),
    is_critical INTEGER NOT NULL DEFAULT 0 CHECK (is_critical IN (0, 1)),
    release_notes TEXT,
    released_at DATETIME NOT NULL,
    UNIQUE (model, version)
);

CREATE TABLE firmware_update_jobs (
    id INTEGER PRIMARY KEY,
    device_id INTEGER NOT NULL REFERENCES devices(id) ON DELETE CASCADE,
    release_id INTEGER NOT NULL REFERENCES firmware_releases(id) ON DELETE RESTRICT,
    from_version TEXT NOT NULL,
    to_version TEXT NOT NULL,
    status TEXT NOT NULL DEFAULT 'scheduled' CHECK (status IN ('scheduled', 'in_progress', 'completed', 'failed', 'cancelled')),
    scheduled_for DATETIME,
    started_at DATETIME,
    completed_at DATETIME,
    error_message TEXT,
    requested_by_user_id INTEGER REFERENCES users(id) ON DELETE SET NULL,
    created_at DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP
);

CREATE TABLE scenes (
    id INTEGER PRIMARY KEY,
    home_id INTEGER NOT NULL REFERENCES homes(id) ON DELETE CASCADE,
    name TEXT NOT NULL,
    description TEXT,
    icon TEXT,
    is_favorite INTEGER NOT NULL DEFAULT 0 CHECK (is_favorite IN (0, 1)),
    created_by_user_id INTEGER REFERENCES users(id) ON DELETE SET NULL,
    last_activated_at DATETIME,
    created_at DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,
    UNIQUE (home_id, name)
);

CREATE TABLE scene_actions (
    id INTEGER PRIMARY KEY,
    scene_id INTEGER NOT NULL REFERENCES scenes(id) ON DELETE CASCADE,
    device_id INTEGER NOT NULL REFERENCES devices(id) ON DELETE CASCADE,
    action TEXT NOT NULL CHECK (action IN ('turn_on', 'turn_off', 'set_brightness', 'set_temperature', 'lock', 'unlock', 'open', 'close')),
    value REAL,
    sort_order INTEGER NOT NULL DEFAULT 1,
    UNIQUE (scene_id, device_id, action)
);

CREATE TABLE automations (
    id INTEGER PRIMARY KEY,
    home_id INTEGER NOT NULL REFERENCES homes(id) ON DELETE CASCADE,
    name TEXT NOT NULL,
    trigger_type TEXT NOT NULL CHECK (trigger_type IN ('time', 'sunrise', 'sunset', 'sensor', 'device_state', 'away_mode')),
    trigger_time TEXT,
    days_of_week TEXT NOT NULL DEFAULT 'Mon,Tue,Wed,Thu,Fri,Sat,Sun',
    trigger_device_id INTEGER REFERENCES devices(id) ON DELETE SET NULL,
    trigger_condition TEXT,
    scene_id INTEGER REFERENCES scenes(id) ON DELETE SET NULL,
    action_device_id INTEGER REFERENCES devices(id) ON DELETE SET NULL,
    action TEXT CHECK (action IS NULL OR action IN ('turn_on', 'turn_off', 'set_brightness', 'set_temperature', 'lock', 'unlock', 'open', 'close')),
    action_value REAL,
    notify_members INTEGER NOT NULL DEFAULT 0 CHECK (notify_members IN (0, 1)),
    is_enabled INTEGER NOT NULL DEFAULT 1 CHECK (is_enabled IN (0, 1)),
    last_triggered_at DATETIME,
    created_by_user_id INTEGER REFERENCES users(id) ON DELETE SET NULL,
    created_at DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,
    UNIQUE (home_id, name)
);

CREATE TABLE sensor_readings (
    id INTEGER PRIMARY KEY,
    device_id INTEGER NOT NULL REFERENCES devices(id) ON DELETE CASCADE,
    metric TEXT NOT NULL CHECK (metric IN ('temperature', 'humidity', 'motion', 'co2', 'power_w', 'contact', 'illuminance')),
    value REAL NOT NULL,
    unit TEXT NOT NULL,
    recorded_at DATETIME NOT NULL
);

CREATE TABLE device_events (
    id INTEGER PRIMARY KEY,
    device_id INTEGER NOT NULL REFERENCES devices(id) ON DELETE CASCADE,
    user_id INTEGER REFERENCES users(id) ON DELETE SET NULL,
    event_type TEXT NOT NULL CHECK (event_type IN ('state_change', 'command_failed', 'firmware_update', 'went_offline', 'came_online', 'motion_detected', 'doorbell_pressed', 'scene_activated')),
    details TEXT,
    occurred_at DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP
);

CREATE TABLE alerts (
    id INTEGER PRIMARY KEY,
    home_id INTEGER NOT NULL REFERENCES homes(id) ON DELETE CASCADE,
    device_id INTEGER REFERENCES devices(id) ON DELETE SET NULL,
    severity TEXT NOT NULL CHECK (severity IN ('info', 'warning', 'critical')),
    title TEXT NOT NULL,
    message TEXT NOT NULL,
    is_acknowledged INTEGER NOT NULL DEFAULT 0 CHECK (is_acknowledged IN (0, 1)),
    acknowledged_by_user_id INTEGER REFERENCES users(id) ON DELETE SET NULL,
    acknowledged_at DATETIME,
    created_at DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP
);

CREATE INDEX idx_homes_owner ON homes(owner_user_id);
CREATE INDEX idx_home_members_user ON home_members(user_id);
CREATE INDEX idx_rooms_home ON rooms(home_id);
CREATE INDEX idx_devices_home ON devices(home_id);
CREATE INDEX idx_devices_room ON devices(room_id);
CREATE INDEX idx_devices_type ON devices(device_type);
CREATE INDEX idx_devices_model ON devices(model);
CREATE INDEX idx_firmware_releases_model ON firmware_releases(model);
CREATE INDEX idx_firmware_jobs_device ON firmware_update_jobs(device_id);
CREATE INDEX idx_firmware_jobs_status ON firmware_update_jobs(status);
CREATE INDEX idx_scenes_home ON scenes(home_id);
CREATE INDEX idx_scene_actions_scene ON scene_actions(scene_id);
CREATE INDEX idx_automations_home ON automations(home_id);
CREATE INDEX idx_sensor_readings_device_metric ON sensor_readings(device_id, metric);
CREATE INDEX idx_sensor_readings_recorded ON sensor_readings(recorded_at);
CREATE INDEX idx_device_events_device ON device_events(device_id);
CREATE INDEX idx_alerts_home ON alerts(home_id);
