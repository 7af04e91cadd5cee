def verify_task_completion(initial_db_path: str, final_db_path: str, final_answer: str | None = None) -> dict:
    import sqlite3

    def q(path, sql, params=()):
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            return conn.execute(sql, params).fetchall()
        finally:
            conn.close()

    sql = ("SELECT m.id, m.role, m.can_control_locks FROM home_members m JOIN users u ON u.id = m.user_id "
           "JOIN homes h ON h.id = m.home_id WHERE u.full_name = 'Sam Okafor' AND h.name = 'Lakeside Cabin'")
    before = q(initial_db_path, sql)
    after = q(final_db_path, sql)
    if len(before) != 1 or len(after) != 1 or before[0][0] != after[0][0]:
        return {"result": "others"}
    if before[0][1] != "guest" or before[0][2] != 0:
        return {"result": "others"}
    if after[0][1] != "admin" or after[0][2] != 1:
        return {"result": "others"}
    rest = "SELECT id, home_id, user_id, role, can_control_locks FROM home_members WHERE id != ? ORDER BY id"
    if q(initial_db_path, rest, (after[0][0],)) != q(final_db_path, rest, (after[0][0],)):
        return {"result": "others"}
    return {"result": "complete"}
