def verify_task(initial_db_path: str, final_db_path: str, final_answer: str | None = None) -> dict:
    import sqlite3

    def rows(path, sql, params=()):
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        conn.row_factory = sqlite3.Row
        try:
            return [dict(r) for r in conn.execute(sql, params).fetchall()]
        finally:
            conn.close()

    sql = ("SELECT r.name AS room_name, d.name AS device_name, MAX(sr.value) AS max_temperature FROM sensor_readings sr "
           "JOIN devices d ON d.id = sr.device_id JOIN rooms r ON r.id = d.room_id JOIN homes h ON h.id = d.home_id "
           "WHERE h.name = 'Maple Street House' AND d.device_type = 'sensor' AND sr.metric = 'temperature' "
           "GROUP BY d.id ORDER BY max_temperature DESC")
    count = "SELECT COUNT(*) AS n FROM sensor_readings"
    return {
        "max_temperature_per_sensor": rows(initial_db_path, sql),
        "reading_count_before": rows(initial_db_path, count)[0]["n"],
        "reading_count_after": rows(final_db_path, count)[0]["n"],
        "final_answer": final_answer,
    }
