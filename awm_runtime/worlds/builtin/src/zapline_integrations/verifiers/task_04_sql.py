def verify_task(initial_db_path: str, final_db_path: str, final_answer: str | None = None) -> dict:
    import sqlite3

    def rows(path, sql, params=()):
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        conn.row_factory = sqlite3.Row
        out = [dict(r) for r in conn.execute(sql, params).fetchall()]
        conn.close()
        return out

    z = rows(final_db_path, "SELECT id FROM zaps WHERE name = ?", ("Gmail Invoices to Google Drive",))
    zid = z[0]["id"] if z else -1
    q = "SELECT id, position, step_type, title, app_event_id, connection_id FROM zap_steps WHERE zap_id = ? ORDER BY position"
    after = rows(final_db_path, q, (zid,))
    ids = [s["id"] for s in after] or [-1]
    marks = ",".join("?" for _ in ids)
    return {
        "steps_before": rows(initial_db_path, q, (zid,)),
        "steps_after": after,
        "filter_conditions_after": rows(final_db_path, f"SELECT step_id, group_index, field, operator, value FROM filter_conditions WHERE step_id IN ({marks})", tuple(ids)),
        "final_answer": final_answer,
    }
