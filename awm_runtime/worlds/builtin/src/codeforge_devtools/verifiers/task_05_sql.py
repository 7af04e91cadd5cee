def verify_task(initial_db_path: str, final_db_path: str, final_answer: str | None = None) -> dict:
    import sqlite3

    def query(path, sql, params=()):
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        conn.row_factory = sqlite3.Row
        rows = [dict(r) for r in conn.execute(sql, params).fetchall()]
        conn.close()
        return rows

    sql = ("SELECT DISTINCT i.id, i.number, i.title, i.state FROM issues i JOIN repositories r ON r.id = i.repository_id "
           "JOIN issue_labels il ON il.issue_id = i.id JOIN labels l ON l.id = il.label_id "
           "WHERE r.name = 'lumen-api' AND l.name = 'bug' ORDER BY i.number")
    before = query(initial_db_path, sql)
    state_sql = "SELECT id, state FROM issues ORDER BY id"
    return {
        "lumen_api_bug_issues": before,
        "expected_open_bug_count": len([i for i in before if i["state"] == "open"]),
        "issues_unchanged": query(initial_db_path, state_sql) == query(final_db_path, state_sql),
        "final_answer": final_answer,
    }
