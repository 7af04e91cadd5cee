def verify_task(initial_db_path: str, final_db_path: str, final_answer: str | None = None) -> dict:
    import sqlite3

    def query(path, sql, params=()):
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        conn.row_factory = sqlite3.Row
        rows = [dict(r) for r in conn.execute(sql, params).fetchall()]
        conn.close()
        return rows

    issue_sql = ("SELECT i.id, i.number, i.title, i.state, m.title AS milestone FROM issues i "
                 "JOIN repositories r ON r.id = i.repository_id LEFT JOIN milestones m ON m.id = i.milestone_id "
                 "WHERE r.name = 'lumen-api' AND i.title = 'Intermittent timeout in /v2/orders under load'")
    asg_sql = ("SELECT u.username FROM issue_assignees a JOIN users u ON u.id = a.user_id JOIN issues i ON i.id = a.issue_id "
               "JOIN repositories r ON r.id = i.repository_id "
               "WHERE r.name = 'lumen-api' AND i.title = 'Intermittent timeout in /v2/orders under load' ORDER BY u.username")
    return {
        "issue_before": query(initial_db_path, issue_sql),
        "issue_after": query(final_db_path, issue_sql),
        "assignees_before": [r["username"] for r in query(initial_db_path, asg_sql)],
        "assignees_after": [r["username"] for r in query(final_db_path, asg_sql)],
        "assignment_count_before": query(initial_db_path, "SELECT COUNT(*) AS n FROM issue_assignees")[0]["n"],
        "assignment_count_after": query(final_db_path, "SELECT COUNT(*) AS n FROM issue_assignees")[0]["n"],
        "final_answer": final_answer,
    }
