def verify_task_completion(initial_db_path: str, final_db_path: str, final_answer: str | None = None) -> dict:
    import sqlite3

    def query(path, sql, params=()):
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        rows = conn.execute(sql, params).fetchall()
        conn.close()
        return rows

    sql = ("SELECT r.id, r.is_archived FROM repositories r JOIN organizations o ON o.id = r.org_id "
           "WHERE o.login = 'nimbus-labs' AND r.name = 'legacy-dashboard'")
    before = query(initial_db_path, sql)
    after = query(final_db_path, sql)
    if len(before) != 1 or len(after) != 1:
        return {"result": "others"}
    if before[0][1] != 0 or after[0][1] != 1:
        return {"result": "others"}
    others = "SELECT id, name, is_archived, visibility FROM repositories WHERE id <> ? ORDER BY id"
    if query(initial_db_path, others, (before[0][0],)) != query(final_db_path, others, (before[0][0],)):
        return {"result": "others"}
    return {"result": "complete"}
