def verify_task(initial_db_path: str, final_db_path: str, final_answer: str | None = None) -> dict:
    import sqlite3

    def query(path, sql, params=()):
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        conn.row_factory = sqlite3.Row
        rows = [dict(r) for r in conn.execute(sql, params).fetchall()]
        conn.close()
        return rows

    sql = ("SELECT b.id, r.name AS repository, b.name, b.is_protected FROM branches b "
           "JOIN repositories r ON r.id = b.repository_id ORDER BY b.id")
    before = query(initial_db_path, sql)
    after = query(final_db_path, sql)
    after_ids = {b["id"] for b in after}
    before_ids = {b["id"] for b in before}
    return {
        "lumen_api_branches_before": [b for b in before if b["repository"] == "lumen-api"],
        "lumen_api_branches_after": [b for b in after if b["repository"] == "lumen-api"],
        "deleted_branches": [b for b in before if b["id"] not in after_ids],
        "added_branches": [b for b in after if b["id"] not in before_ids],
        "final_answer": final_answer,
    }
