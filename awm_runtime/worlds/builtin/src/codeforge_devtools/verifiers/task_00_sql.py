def verify_task(initial_db_path: str, final_db_path: str, final_answer: str | None = None) -> dict:
    import sqlite3

    def query(path, sql, params=()):
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        conn.row_factory = sqlite3.Row
        rows = [dict(r) for r in conn.execute(sql, params).fetchall()]
        conn.close()
        return rows

    sql = ("SELECT l.id, r.name AS repository, l.name, l.color, l.description FROM labels l "
           "JOIN repositories r ON r.id = l.repository_id WHERE r.name = 'lumen-api' OR LOWER(l.name) LIKE '%triage%' ORDER BY l.id")
    return {
        "lumen_api_labels_before": query(initial_db_path, sql),
        "lumen_api_labels_after": query(final_db_path, sql),
        "label_count_before": query(initial_db_path, "SELECT COUNT(*) AS n FROM labels")[0]["n"],
        "label_count_after": query(final_db_path, "SELECT COUNT(*) AS n FROM labels")[0]["n"],
        "final_answer": final_answer,
    }
