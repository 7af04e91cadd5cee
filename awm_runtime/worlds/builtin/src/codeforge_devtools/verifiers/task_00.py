def verify_task_completion(initial_db_path: str, final_db_path: str, final_answer: str | None = None) -> dict:
    import sqlite3

    def query(path, sql, params=()):
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        rows = conn.execute(sql, params).fetchall()
        conn.close()
        return rows

    repo_sql = ("SELECT r.id FROM repositories r JOIN organizations o ON o.id = r.org_id "
                "WHERE o.login = 'nimbus-labs' AND r.name = 'lumen-api'")
    repo = query(initial_db_path, repo_sql)
    if len(repo) != 1:
        return {"result": "others"}
    repo_id = repo[0][0]
    label_sql = "SELECT color, description FROM labels WHERE repository_id = ? AND LOWER(TRIM(name)) = 'needs-triage'"
    if query(initial_db_path, label_sql, (repo_id,)):
        return {"result": "others"}
    after = query(final_db_path, label_sql, (repo_id,))
    if len(after) != 1:
        return {"result": "others"}
    color, description = after[0]
    if (color or "").lstrip("#").lower() != "fbca04":
        return {"result": "others"}
    if " ".join((description or "").split()).rstrip(".").lower() != "awaiting initial triage":
        return {"result": "others"}
    n_before = query(initial_db_path, "SELECT COUNT(*) FROM labels")[0][0]
    n_after = query(final_db_path, "SELECT COUNT(*) FROM labels")[0][0]
    if n_after != n_before + 1:
        return {"result": "others"}
    return {"result": "complete"}
