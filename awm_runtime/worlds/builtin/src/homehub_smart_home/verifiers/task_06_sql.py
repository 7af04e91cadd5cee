def verify_task(initial_db_path: str, final_db_path: str, final_answer: str | None = None) -> dict:
    import sqlite3

    def rows(path, sql, params=()):
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        conn.row_factory = sqlite3.Row
        try:
            return [dict(r) for r in conn.execute(sql, params).fetchall()]
        finally:
            conn.close()

    dev = "SELECT id, name, model, firmware_version, battery_level, is_online FROM devices WHERE model = 'Boltline SmartDeadbolt Pro' ORDER BY id"
    rel = "SELECT id, version, channel, is_critical, released_at FROM firmware_releases WHERE model = 'Boltline SmartDeadbolt Pro' ORDER BY released_at DESC"
    jobs = ("SELECT j.id, d.name AS device_name, j.from_version, j.to_version, j.status, j.error_message FROM firmware_update_jobs j "
            "JOIN devices d ON d.id = j.device_id WHERE d.name = 'Front Door Lock' ORDER BY j.id")
    return {
        "deadbolts_before": rows(initial_db_path, dev),
        "deadbolts_after": rows(final_db_path, dev),
        "releases": rows(initial_db_path, rel),
        "front_door_jobs_before": rows(initial_db_path, jobs),
        "front_door_jobs_after": rows(final_db_path, jobs),
        "final_answer": final_answer,
    }
