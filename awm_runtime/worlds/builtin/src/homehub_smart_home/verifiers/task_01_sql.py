def verify_task(initial_db_path: str, final_db_path: str, final_answer: str | None = None) -> dict:
    import sqlite3

    def rows(path, sql, params=()):
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        conn.row_factory = sqlite3.Row
        try:
            return [dict(r) for r in conn.execute(sql, params).fetchall()]
        finally:
            conn.close()

    sql = "SELECT id, home_id, name, state, target_temperature, is_online FROM devices WHERE device_type = 'thermostat' ORDER BY id"
    events = "SELECT device_id, event_type, details FROM device_events WHERE device_id IN (SELECT id FROM devices WHERE name = 'Hallway Thermostat') ORDER BY id"
    return {
        "thermostats_before": rows(initial_db_path, sql),
        "thermostats_after": rows(final_db_path, sql),
        "hallway_thermostat_events_after": rows(final_db_path, events),
        "final_answer": final_answer,
    }
