def verify_task(initial_db_path: str, final_db_path: str, final_answer: str | None = None) -> dict:
    import sqlite3

    def rows(path, sql, params=()):
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        conn.row_factory = sqlite3.Row
        out = [dict(r) for r in conn.execute(sql, params).fetchall()]
        conn.close()
        return out

    q = "SELECT v.*, w.name AS workflow_name FROM variables v LEFT JOIN workflows w ON w.id = v.workflow_id WHERE v.key LIKE ?"
    return {
        "workflow": rows(final_db_path, "SELECT id, name FROM workflows WHERE name = ?", ("Vendor Invoice Approval",)),
        "matching_variables_before": rows(initial_db_path, q, ("%INVOICE%",)),
        "matching_variables_after": rows(final_db_path, q, ("%INVOICE%",)),
        "variable_count_before": rows(initial_db_path, "SELECT COUNT(*) AS n FROM variables")[0]["n"],
        "variable_count_after": rows(final_db_path, "SELECT COUNT(*) AS n FROM variables")[0]["n"],
        "final_answer": final_answer,
    }
