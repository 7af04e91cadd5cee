def verify_task_completion(initial_db_path: str, final_db_path: str, final_answer: str | None = None) -> dict:
    import sqlite3

    def query(path, sql, params=()):
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        rows = conn.execute(sql, params).fetchall()
        conn.close()
        return rows

    repo_sql = ("SELECT r.id FROM repositories r JOIN organizations o ON o.id = r.org_id "
                "WHERE o.login = 'nimbus-labs' AND r.name = 'lumen-web'")
    repo = query(initial_db_path, repo_sql)
    if len(repo) != 1:
        return {"result": "others"}
    repo_id = repo[0][0]
    hook_sql = "SELECT id, url, events, content_type, is_active FROM webhooks WHERE repository_id = ?"
    target = "https://hooks.nimbuslabs.io/ci"
    before = [h for h in query(initial_db_path, hook_sql, (repo_id,)) if (h[1] or "").strip().rstrip("/") == target]
    after = [h for h in query(final_db_path, hook_sql, (repo_id,)) if (h[1] or "").strip().rstrip("/") == target]
    if before or len(after) != 1:
        return {"result": "others"}
    _, _, events, content_type, active = after[0]
    event_set = {e.strip() for e in (events or "").split(",") if e.strip()}
    if event_set != {"push", "pull_request"} or content_type != "json" or active != 1:
        return {"result": "others"}
    return {"result": "complete"}
