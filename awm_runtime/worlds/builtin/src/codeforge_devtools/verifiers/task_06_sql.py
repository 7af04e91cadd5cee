def verify_task(initial_db_path: str, final_db_path: str, final_answer: str | None = None) -> dict:
    import sqlite3

    def query(path, sql, params=()):
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        conn.row_factory = sqlite3.Row
        rows = [dict(r) for r in conn.execute(sql, params).fetchall()]
        conn.close()
        return rows

    main_sql = ("SELECT u.username, u.full_name, COUNT(*) AS commits FROM commits c JOIN branches b ON b.id = c.branch_id "
                "JOIN repositories r ON r.id = c.repository_id JOIN users u ON u.id = c.author_id "
                "WHERE r.name = 'forge-cli' AND b.name = 'main' GROUP BY u.id ORDER BY commits DESC")
    all_sql = ("SELECT u.username, COUNT(*) AS commits FROM commits c JOIN repositories r ON r.id = c.repository_id "
               "JOIN users u ON u.id = c.author_id WHERE r.name = 'forge-cli' GROUP BY u.id ORDER BY commits DESC")
    return {
        "main_branch_ranking": query(initial_db_path, main_sql),
        "all_branches_ranking": query(initial_db_path, all_sql),
        "commit_count_before": query(initial_db_path, "SELECT COUNT(*) AS n FROM commits")[0]["n"],
        "commit_count_after": query(final_db_path, "SELECT COUNT(*) AS n FROM commits")[0]["n"],
        "final_answer": final_answer,
    }
