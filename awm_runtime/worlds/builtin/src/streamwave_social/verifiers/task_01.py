def verify_task_completion(initial_db_path: str, final_db_path: str, final_answer: str | None = None) -> dict:
    import sqlite3

    def q(path, sql, params=()):
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            return conn.execute(sql, params).fetchall()
        finally:
            conn.close()

    sql = ("SELECT v.id, v.visibility, v.status FROM videos v JOIN channels c ON c.id = v.channel_id "
           "WHERE c.owner_user_id = 1 AND v.title = 'Sourdough Starter from Scratch'")
    before = q(initial_db_path, sql)
    after = q(final_db_path, sql)
    if len(before) != 1 or len(after) != 1:
        return {"result": "others"}
    if before[0][1] != "unlisted" or after[0][1] != "public" or after[0][2] != "published":
        return {"result": "others"}
    rest = "SELECT id, title, visibility, status FROM videos WHERE id != ? ORDER BY id"
    if q(initial_db_path, rest, (before[0][0],)) != q(final_db_path, rest, (before[0][0],)):
        return {"result": "others"}
    return {"result": "complete"}
