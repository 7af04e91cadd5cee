def verify_task(initial_db_path: str, final_db_path: str, final_answer: str | None = None) -> dict:
    import sqlite3

    def rows(path, sql, params=()):
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        conn.row_factory = sqlite3.Row
        try:
            return [dict(r) for r in conn.execute(sql, params).fetchall()]
        finally:
            conn.close()

    dev = ("SELECT d.id, h.name AS home_name, d.name, d.firmware_version, d.is_online FROM devices d "
           "JOIN homes h ON h.id = d.home_id WHERE d.model = 'Lumina A19' ORDER BY d.id")
    rel = "SELECT id, version, channel, released_at FROM firmware_releases WHERE model = 'Lumina A19' ORDER BY released_at DESC"
    jobs = ("SELECT j.id, d.name AS device_name, j.from_version, j.to_version, j.status, j.error_message FROM firmware_update_jobs j "
            "JOIN devices d ON d.id = j.device_id WHERE d.model = 'Lumina A19' ORDER BY j.id")
    return {
        "a19_devices_before": rows(initial_db_path, dev),
        "a19_devices_after": rows(final_db_path, dev),
        "a19_releases": rows(initial_db_path, rel),
        "a19_jobs_before": rows(initial_db_path, jobs),
        "a19_jobs_after": rows(final_db_path, jobs),
        "final_answer": final_answer,
    }
