def verify_task_completion(initial_db_path: str, final_db_path: str, final_answer: str | None = None) -> dict:
    import sqlite3

    def q(path, sql, params=()):
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            return conn.execute(sql, params).fetchall()
        finally:
            conn.close()

    scene_sql = "SELECT s.id FROM scenes s JOIN homes h ON h.id = s.home_id WHERE h.name = 'Maple Street House' AND lower(trim(s.name)) = 'movie night'"
    if q(initial_db_path, scene_sql):
        return {"result": "others"}
    after = q(final_db_path, scene_sql)
    if len(after) != 1:
        return {"result": "others"}
    scene_id = after[0][0]
    actions = q(final_db_path, "SELECT d.name, sa.action, sa.value FROM scene_actions sa JOIN devices d ON d.id = sa.device_id WHERE sa.scene_id = ?", (scene_id,))
    if len(actions) != 2:
        return {"result": "others"}
    found_dim = False
    found_off = False
    for name, action, value in actions:
        if name == "Living Room Ceiling Light" and action == "set_brightness" and value is not None and abs(float(value) - 20) < 0.01:
            found_dim = True
        elif name == "Kitchen Pendant Lights" and action == "turn_off":
            found_off = True
    if not (found_dim and found_off):
        return {"result": "others"}
    old_actions = "SELECT id, scene_id, device_id, action, value FROM scene_actions WHERE scene_id != ? ORDER BY id"
    if q(initial_db_path, old_actions, (scene_id,)) != q(final_db_path, old_actions, (scene_id,)):
        return {"result": "others"}
    return {"result": "complete"}
