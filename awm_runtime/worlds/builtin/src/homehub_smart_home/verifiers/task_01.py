def verify_task_completion(initial_db_path: str, final_db_path: str, final_answer: str | None = None) -> dict:
    import sqlite3

    def q(path, sql, params=()):
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            return conn.execute(sql, params).fetchall()
        finally:
            conn.close()

    sql = "SELECT d.id, d.target_temperature FROM devices d JOIN homes h ON h.id = d.home_id WHERE d.name = 'Hallway Thermostat' AND h.name = 'Maple Street House'"
    before = q(initial_db_path, sql)
    after = q(final_db_path, sql)
    if len(before) != 1 or len(after) != 1:
        return {"result": "others"}
    old = before[0][1]
    new = after[0][1]
    if old is None or abs(float(old) - 20.5) < 0.01:
        return {"result": "others"}
    if new is None or abs(float(new) - 20.5) > 0.01:
        return {"result": "others"}
    others = "SELECT id, target_temperature FROM devices WHERE device_type = 'thermostat' AND id != ? ORDER BY id"
    if q(initial_db_path, others, (before[0][0],)) != q(final_db_path, others, (before[0][0],)):
        return {"result": "others"}
    return {"result": "complete"}
