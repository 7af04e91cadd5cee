def verify_task_completion(initial_db_path: str, final_db_path: str, final_answer: str | None = None) -> dict:
    import sqlite3
    import re

    def q(path, sql, params=()):
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            return conn.execute(sql, params).fetchall()
        finally:
            conn.close()

    if not final_answer:
        return {"result": "others"}
    best = q(initial_db_path,
             "SELECT r.name, sr.value FROM sensor_readings sr JOIN devices d ON d.id = sr.device_id "
             "JOIN rooms r ON r.id = d.room_id JOIN homes h ON h.id = d.home_id "
             "WHERE h.name = 'Maple Street House' AND d.device_type = 'sensor' AND sr.metric = 'temperature' "
             "ORDER BY sr.value DESC LIMIT 1")
    if not best:
        return {"result": "others"}
    room_name, value = best[0]
    for table_sql in ("SELECT id, device_id, metric, value FROM sensor_readings ORDER BY id",
                      "SELECT id, room_id, state, is_online FROM devices ORDER BY id"):
        if q(initial_db_path, table_sql) != q(final_db_path, table_sql):
            return {"result": "others"}
    text = " ".join(final_answer.lower().split())
    if room_name.lower() not in text:
        return {"result": "others"}
    numbers = [float(n) for n in re.findall(r"\d+(?:\.\d+)?", text)]
    if not any(abs(n - float(value)) < 0.051 for n in numbers):
        return {"result": "others"}
    return {"result": "complete"}
