def verify_task_completion(initial_db_path: str, final_db_path: str, final_answer: str | None = None) -> dict:
    import sqlite3

    def query(path, sql, params=()):
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        rows = conn.execute(sql, params).fetchall()
        conn.close()
        return rows

    issue_sql = ("SELECT i.id, i.milestone_id, i.state, i.repository_id FROM issues i JOIN repositories r ON r.id = i.repository_id "
                 "WHERE r.name = 'lumen-api' AND i.title = 'Intermittent timeout in /v2/orders under load'")
    before = query(initial_db_path, issue_sql)
    after = query(final_db_path, issue_sql)
    if len(before) != 1 or len(after) != 1:
        return {"result": "others"}
    issue_id, ms_before, _, repo_id = before[0]
    ms = query(initial_db_path, "SELECT id FROM milestones WHERE repository_id = ? AND title = 'v2.4'", (repo_id,))
    priya = query(initial_db_path, "SELECT id FROM users WHERE username = 'priya-nair'")
    if len(ms) != 1 or len(priya) != 1:
        return {"result": "others"}
    if ms_before == ms[0][0] or after[0][1] != ms[0][0] or after[0][2] != "open":
        return {"result": "others"}
    asg_sql = "SELECT user_id FROM issue_assignees WHERE issue_id = ?"
    a_before = {r[0] for r in query(initial_db_path, asg_sql, (issue_id,))}
    a_after = {r[0] for r in query(final_db_path, asg_sql, (issue_id,))}
    if priya[0][0] in a_before or a_after != a_before | {priya[0][0]}:
        return {"result": "others"}
    other_asg = "SELECT issue_id, user_id FROM issue_assignees WHERE issue_id <> ? ORDER BY issue_id, user_id"
    if query(initial_db_path, other_asg, (issue_id,)) != query(final_db_path, other_asg, (issue_id,)):
        return {"result": "others"}
    return {"result": "complete"}
