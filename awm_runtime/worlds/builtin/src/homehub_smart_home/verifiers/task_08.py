def verify_task_completion(initial_db_path: str, final_db_path: str, final_answer: str | None = None) -> dict:
    import sqlite3

    def q(path, sql, params=()):
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            return conn.execute(sql, params).fetchall()
        finally:
            conn.close()

    home = q(initial_db_path, "SELECT id FROM homes WHERE name = 'Lakeside Cabin'")
    if len(home) != 1:
        return {"result": "others"}
    home_id = home[0][0]
    dev_sql = "SELECT id, device_type, state, target_temperature, brightness FROM devices WHERE home_id = ? ORDER BY id"
    before = {r[0]: r for r in q(initial_db_path, dev_sql, (home_id,))}
    after = {r[0]: r for r in q(final_db_path, dev_sql, (home_id,))}
    if set(before) != set(after):
        return {"result": "others"}
    changed = 0
    for dev_id, row in after.items():
        old = before[dev_id]
        dtype = row[1]
        if dtype == "thermostat":
            if row[3] is None or abs(float(row[3]) - 12.0) > 0.01:
                return {"result": "others"}
        elif dtype == "lock":
            if row[2] != "locked":
                return {"result": "others"}
        elif dtype == "light":
            if row[2] != "off":
                return {"result": "others"}
        else:
            if row[2:] != old[2:]:
                return {"result": "others"}
        if row != old:
            changed += 1
    if changed == 0:
        return {"result": "others"}
    auto_sql = "SELECT id, is_enabled FROM automations WHERE home_id = ? AND name = 'Evening Porch Light'"
    a_before = q(initial_db_path, auto_sql, (home_id,))
    a_after = q(final_db_path, auto_sql, (home_id,))
    if len(a_before) != 1 or len(a_after) != 1 or a_before[0][1] != 1 or a_after[0][1] != 0:
        return {"result": "others"}
    rest_auto = "SELECT id, name, is_enabled FROM automations WHERE id != ? ORDER BY id"
    if q(initial_db_path, rest_auto, (a_before[0][0],)) != q(final_db_path, rest_auto, (a_before[0][0],)):
        return {"result": "others"}
    other_devs = "SELECT id, state, target_temperature, brightness FROM devices WHERE home_id != ? ORDER BY id"
    if q(initial_db_path, other_devs, (home_id,)) != q(final_db_path, other_devs, (home_id,)):
        return {"result": "others"}
    return {"result": "complete"}
