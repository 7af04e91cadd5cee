def verify_task(initial_db_path: str, final_db_path: str, final_answer: str | None = None) -> dict:
    import sqlite3

    def rows(path, sql, params=()):
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        conn.row_factory = sqlite3.Row
        out = [dict(r) for r in conn.execute(sql, params).fetchall()]
        conn.close()
        return out

    label = "Salesforce - Production"
    c = rows(initial_db_path, "SELECT id FROM connections WHERE label = ?", (label,))
    cid = c[0]["id"] if c else -1
    zq = "SELECT DISTINCT z.id, z.name, z.status, z.status_reason FROM zaps z LEFT JOIN zap_steps s ON s.zap_id = z.id WHERE z.trigger_connection_id = ? OR s.connection_id = ? ORDER BY z.id"
    max_before = rows(initial_db_path, "SELECT COALESCE(MAX(id), 0) AS m FROM zap_runs")[0]["m"]
    return {
        "connection_before": rows(initial_db_path, "SELECT id, label, status, last_verified_at FROM connections WHERE label = ?", (label,)),
        "connection_after": rows(final_db_path, "SELECT id, label, status, last_verified_at FROM connections WHERE label = ?", (label,)),
        "zaps_using_connection_before": rows(initial_db_path, zq, (cid, cid)),
        "zaps_using_connection_after": rows(final_db_path, zq, (cid, cid)),
        "errored_runs_before_for_those_zaps": rows(initial_db_path, "SELECT r.id, r.zap_id, r.started_at FROM zap_runs r WHERE r.status = 'error' AND r.zap_id IN (SELECT DISTINCT z.id FROM zaps z LEFT JOIN zap_steps s ON s.zap_id = z.id WHERE z.trigger_connection_id = ? OR s.connection_id = ?) ORDER BY r.zap_id, r.started_at DESC", (cid, cid)),
        "new_runs_after": rows(final_db_path, "SELECT id, zap_id, status, replayed_from_run_id, error_message FROM zap_runs WHERE id > ? ORDER BY id", (max_before,)),
        "final_answer": final_answer,
    }
