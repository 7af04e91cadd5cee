def verify_task(initial_db_path: str, final_db_path: str, final_answer: str | None = None) -> dict:
    import sqlite3

    def query(path, sql, params=()):
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        conn.row_factory = sqlite3.Row
        rows = [dict(r) for r in conn.execute(sql, params).fetchall()]
        conn.close()
        return rows

    br_sql = ("SELECT b.name, b.head_commit_sha FROM branches b JOIN repositories r ON r.id = b.repository_id "
              "WHERE r.name = 'forge-cli' ORDER BY b.id")
    pr_sql = ("SELECT p.number, p.title, p.head_branch, p.base_branch, p.state, p.is_draft FROM pull_requests p "
              "JOIN repositories r ON r.id = p.repository_id WHERE r.name = 'forge-cli' ORDER BY p.number")
    com_sql = ("SELECT c.id, u.username AS author, c.body FROM comments c JOIN users u ON u.id = c.author_id "
               "JOIN issues i ON i.id = c.issue_id WHERE i.title = 'forge deploy hangs when token expires mid-upload' ORDER BY c.id")
    return {
        "branches_before": query(initial_db_path, br_sql),
        "branches_after": query(final_db_path, br_sql),
        "pull_requests_before": query(initial_db_path, pr_sql),
        "pull_requests_after": query(final_db_path, pr_sql),
        "issue_comments_before": query(initial_db_path, com_sql),
        "issue_comments_after": query(final_db_path, com_sql),
        "final_answer": final_answer,
    }
