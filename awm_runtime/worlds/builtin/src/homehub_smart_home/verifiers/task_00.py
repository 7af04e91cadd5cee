def verify_task_completion(initial_db_path: str, final_db_path: str, final_answer: str | None = None) -> dict:
    import sqlite3

    def q(path, sql, params=()):
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            return conn.execute(sql, params).fetchall()
        finally:
            conn.close()

    home = q(final_db_path, "SELECT id FROM homes WHERE name = ?", ("Maple Street House",))
    if len(home) != 1:
        return {"result": "others"}
    home_id = home[0][0]
    sql = "SELECT id, floor, room_type FROM rooms WHERE home_id = ? AND lower(trim(name)) = 'home office'"
    before = q(initial_db_path, sql, (home_id,))
    after = q(final_db_path, sql, (home_id,))
    if before or len(after) != 1:
        return {"result": "others"}
    room_id, floor, room_type = after[0]
    if floor != 2 or room_type != "office":
        return {"result": "others"}
    cols = "SELECT id, home_id, name, floor, room_type FROM rooms WHERE id != ? ORDER BY id"
    if q(initial_db_path, cols, (room_id,)) != q(final_db_path, cols, (room_id,)):
        return {"result": "others"}
    return {"result": "complete"}
