def verify_task(initial_db_path: str, final_db_path: str, final_answer: str | None = None) -> dict:
    import sqlite3

    def query(path, sql, params=()):
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        conn.row_factory = sqlite3.Row
        rows = [dict(r) for r in conn.execute(sql, params).fetchall()]
        conn.close()
        return rows

    pr_sql = ("SELECT p.id, p.number, p.state, p.merge_method, p.merge_commit_sha, p.head_branch, p.base_branch, p.merged_by_id "
              "FROM pull_requests p JOIN repositories r ON r.id = p.repository_id "
              "WHERE r.name = 'lumen-api' AND p.title = 'Add cursor-based pagination to list endpoints'")
    rev_sql = ("SELECT v.id, u.username AS reviewer, v.state, v.body FROM pull_request_reviews v JOIN users u ON u.id = v.reviewer_id "
               "JOIN pull_requests p ON p.id = v.pull_request_id WHERE p.title = 'Add cursor-based pagination to list endpoints' ORDER BY v.id")
    branch_sql = ("SELECT b.name, b.head_commit_sha FROM branches b JOIN repositories r ON r.id = b.repository_id "
                  "WHERE r.name = 'lumen-api' ORDER BY b.id")
    issue_sql = ("SELECT i.id, i.number, i.state, i.state_reason, i.closed_at FROM issues i JOIN repositories r ON r.id = i.repository_id "
                 "WHERE r.name = 'lumen-api' AND i.title = 'Support cursor pagination on list endpoints'")
    com_sql = ("SELECT c.id, u.username AS author, c.body FROM comments c JOIN users u ON u.id = c.author_id JOIN issues i ON i.id = c.issue_id "
               "WHERE i.title = 'Support cursor pagination on list endpoints' ORDER BY c.id")
    rel_sql = ("SELECT rl.tag_name, rl.name, rl.target_branch, rl.is_draft, rl.is_prerelease, rl.published_at FROM releases rl "
               "JOIN repositories r ON r.id = rl.repository_id WHERE r.name = 'lumen-api' ORDER BY rl.id")
    ms_sql = ("SELECT m.title, m.state, m.closed_at FROM milestones m JOIN repositories r ON r.id = m.repository_id "
              "WHERE r.name = 'lumen-api' ORDER BY m.id")
    main_commits = ("SELECT c.sha, c.message FROM commits c JOIN branches b ON b.id = c.branch_id JOIN repositories r ON r.id = c.repository_id "
                    "WHERE r.name = 'lumen-api' AND b.name = 'main' ORDER BY c.committed_at DESC, c.id DESC LIMIT 3")
    out = {"final_answer": final_answer}
    for key, sql in (("pull_request", pr_sql), ("reviews", rev_sql), ("branches", branch_sql), ("issue", issue_sql),
                     ("issue_comments", com_sql), ("releases", rel_sql), ("milestones", ms_sql), ("latest_main_commits", main_commits)):
        out[key + "_before"] = query(initial_db_path, sql)
        out[key + "_after"] = query(final_db_path, sql)
    return out
