def verify_task(initial_db_path: str, final_db_path: str, final_answer: str | None = None) -> dict:
    import sqlite3

    def query(path, sql, params=()):
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        conn.row_factory = sqlite3.Row
        rows = [dict(r) for r in conn.execute(sql, params).fetchall()]
        conn.close()
        return rows

    sql = ("SELECT r.id, o.login || '/' || r.name AS full_name, r.visibility, r.is_archived, r.description "
           "FROM repositories r JOIN organizations o ON o.id = r.org_id ORDER BY r.id")
    return {
        "repositories_before": query(initial_db_path, sql),
        "repositories_after": query(final_db_path, sql),
        "final_answer": final_answer,
    }
