def verify_task_completion(initial_db_path: str, final_db_path: str, final_answer: str | None = None) -> dict:
    import sqlite3

    def query(path, sql, params=()):
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        rows = conn.execute(sql, params).fetchall()
        conn.close()
        return rows

    sam = query(initial_db_path, "SELECT id FROM users WHERE username = 'sam-ortiz'")
    org = query(initial_db_path, "SELECT id FROM organizations WHERE login = 'nimbus-labs'")
    repo = query(initial_db_path, "SELECT r.id FROM repositories r JOIN organizations o ON o.id = r.org_id "
                                  "WHERE o.login = 'nimbus-labs' AND r.name = 'lumen-web'")
    if len(sam) != 1 or len(org) != 1 or len(repo) != 1:
        return {"result": "others"}
    sam_id, org_id, repo_id = sam[0][0], org[0][0], repo[0][0]

    mem_sql = "SELECT role FROM org_memberships WHERE org_id = ? AND user_id = ?"
    if query(initial_db_path, mem_sql, (org_id, sam_id)):
        return {"result": "others"}
    mem = query(final_db_path, mem_sql, (org_id, sam_id))
    if len(mem) != 1 or mem[0][0] != "member":
        return {"result": "others"}

    issue_sql = ("SELECT id, state, milestone_id FROM issues WHERE repository_id = ? "
                 "AND LOWER(TRIM(title)) = 'document local dev setup on apple silicon'")
    if query(initial_db_path, issue_sql, (repo_id,)):
        return {"result": "others"}
    issues = query(final_db_path, issue_sql, (repo_id,))
    if len(issues) != 1:
        return {"result": "others"}
    issue_id, state, milestone_id = issues[0]
    ms = query(final_db_path, "SELECT id FROM milestones WHERE repository_id = ? AND title = 'Q3 Onboarding'", (repo_id,))
    if state != "open" or len(ms) != 1 or milestone_id != ms[0][0]:
        return {"result": "others"}
    labels = {r[0] for r in query(final_db_path, "SELECT l.name FROM issue_labels il JOIN labels l ON l.id = il.label_id "
                                                 "WHERE il.issue_id = ? AND l.repository_id = ?", (issue_id, repo_id))}
    if labels != {"documentation", "good first issue"}:
        return {"result": "others"}
    assignees = {r[0] for r in query(final_db_path, "SELECT user_id FROM issue_assignees WHERE issue_id = ?", (issue_id,))}
    if assignees != {sam_id}:
        return {"result": "others"}
    return {"result": "complete"}
