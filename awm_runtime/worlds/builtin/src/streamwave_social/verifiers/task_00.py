def verify_task_completion(initial_db_path: str, final_db_path: str, final_answer: str | None = None) -> dict:
    import sqlite3

    def q(path, sql, params=()):
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            return conn.execute(sql, params).fetchall()
        finally:
            conn.close()

    sql = "SELECT id, description, visibility FROM playlists WHERE owner_user_id = 1 AND lower(trim(title)) = 'late night coding'"
    before = q(initial_db_path, sql)
    after = q(final_db_path, sql)
    if before or len(after) != 1:
        return {"result": "others"}
    pid, description, visibility = after[0]
    if visibility != "private":
        return {"result": "others"}
    norm = " ".join((description or "").lower().split()).rstrip(".")
    if norm != "focus music and live coding sessions":
        return {"result": "others"}
    rest = "SELECT id, owner_user_id, title, visibility FROM playlists WHERE id != ? ORDER BY id"
    if q(initial_db_path, rest, (pid,)) != q(final_db_path, rest, (pid,)):
        return {"result": "others"}
    return {"result": "complete"}
