def verify_task(initial_db_path: str, final_db_path: str, final_answer: str | None = None) -> dict:
    import sqlite3

    def rows(path, sql, params=()):
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        conn.row_factory = sqlite3.Row
        try:
            return [dict(r) for r in conn.execute(sql, params).fetchall()]
        finally:
            conn.close()

    sql = ("SELECT d.id, d.name, d.device_type, d.is_online FROM devices d JOIN homes h ON h.id = d.home_id "
           "WHERE h.name = 'Maple Street House' AND d.is_online = 0 ORDER BY d.id")
    before = rows(initial_db_path, sql)
    after = rows(final_db_path, sql)
    return {
        "offline_devices_before": before,
        "offline_devices_after": after,
        "expected_count": len(before),
        "final_answer": final_answer,
    }
