def verify_task(initial_db_path: str, final_db_path: str, final_answer: str | None = None) -> dict:
    import sqlite3

    def query(path, sql, params=()):
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        conn.row_factory = sqlite3.Row
        rows = [dict(r) for r in conn.execute(sql, params).fetchall()]
        conn.close()
        return rows

    mem_sql = ("SELECT o.login, m.role FROM org_memberships m JOIN organizations o ON o.id = m.org_id "
               "JOIN users u ON u.id = m.user_id WHERE u.username = 'sam-ortiz'")
    issue_sql = ("SELECT i.id, i.number, i.title, i.state, ms.title AS milestone FROM issues i "
                 "JOIN repositories r ON r.id = i.repository_id LEFT JOIN milestones ms ON ms.id = i.milestone_id "
                 "WHERE r.name = 'lumen-web' AND LOWER(i.title) LIKE '%apple silicon%'")
    out = {
        "sam_memberships_before": query(initial_db_path, mem_sql),
        "sam_memberships_after": query(final_db_path, mem_sql),
        "issue_before": query(initial_db_path, issue_sql),
        "issue_after": query(final_db_path, issue_sql),
        "final_answer": final_answer,
    }
    for issue in out["issue_after"]:
        issue["labels"] = [r["name"] for r in query(final_db_path, "SELECT l.name FROM issue_labels il JOIN labels l ON l.id = il.label_id WHERE il.issue_id = ? ORDER BY l.name", (issue["id"],))]
        issue["assignees"] = [r["username"] for r in query(final_db_path, "SELECT u.username FROM issue_assignees a JOIN users u ON u.id = a.user_id WHERE a.issue_id = ? ORDER BY u.username", (issue["id"],))]
    return out
