def verify_task_completion(initial_db_path: str, final_db_path: str, final_answer: str | None = None) -> dict:
    import sqlite3

    def query(path, sql, params=()):
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        rows = conn.execute(sql, params).fetchall()
        conn.close()
        return rows

    sql = ("SELECT b.id FROM branches b JOIN repositories r ON r.id = b.repository_id "
           "WHERE r.name = 'lumen-api' AND b.name = 'experiment/grpc-gateway'")
    before = query(initial_db_path, sql)
    if len(before) != 1 or query(final_db_path, sql):
        return {"result": "others"}
    others = "SELECT id, repository_id, name, head_commit_sha FROM branches WHERE id <> ? ORDER BY id"
    if query(initial_db_path, others, (before[0][0],)) != query(final_db_path, others, (before[0][0],)):
        return {"result": "others"}
    return {"result": "complete"}
