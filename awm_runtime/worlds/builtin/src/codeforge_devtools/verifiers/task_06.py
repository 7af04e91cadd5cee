def verify_task_completion(initial_db_path: str, final_db_path: str, final_answer: str | None = None) -> dict:
    import sqlite3

    def query(path, sql, params=()):
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        rows = conn.execute(sql, params).fetchall()
        conn.close()
        return rows

    sql = ("SELECT u.username, u.full_name, COUNT(*) AS n FROM commits c JOIN branches b ON b.id = c.branch_id "
           "JOIN repositories r ON r.id = c.repository_id JOIN organizations o ON o.id = r.org_id "
           "JOIN users u ON u.id = c.author_id "
           "WHERE o.login = 'quillstack' AND r.name = 'forge-cli' AND b.name = 'main' "
           "GROUP BY u.id ORDER BY n DESC, u.username")
    ranking = query(initial_db_path, sql)
    if not ranking or (len(ranking) > 1 and ranking[0][2] == ranking[1][2]):
        return {"result": "others"}
    username, full_name, _ = ranking[0]
    commit_sql = "SELECT COUNT(*) FROM commits"
    if query(initial_db_path, commit_sql) != query(final_db_path, commit_sql):
        return {"result": "others"}
    answer = " ".join((final_answer or "").lower().split())
    if username.lower() not in answer and full_name.lower() not in answer:
        return {"result": "others"}
    return {"result": "complete"}
