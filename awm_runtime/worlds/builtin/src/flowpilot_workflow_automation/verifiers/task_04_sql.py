def verify_task(initial_db_path: str, final_db_path: str, final_answer: str | None = None) -> dict:
    import sqlite3

    def rows(path, sql, params=()):
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        conn.row_factory = sqlite3.Row
        out = [dict(r) for r in conn.execute(sql, params).fetchall()]
        conn.close()
        return out

    q = "SELECT t.* FROM triggers t JOIN workflows w ON w.id = t.workflow_id WHERE w.name = ? ORDER BY t.id"
    return {
        "legacy_crm_sync_triggers_before": rows(initial_db_path, q, ("Legacy CRM Sync",)),
        "legacy_crm_sync_triggers_after": rows(final_db_path, q, ("Legacy CRM Sync",)),
        "trigger_count_before": rows(initial_db_path, "SELECT COUNT(*) AS n FROM triggers")[0]["n"],
        "trigger_count_after": rows(final_db_path, "SELECT COUNT(*) AS n FROM triggers")[0]["n"],
        "workflow_after": rows(final_db_path, "SELECT id, name, status FROM workflows WHERE name = ?", ("Legacy CRM Sync",)),
        "final_answer": final_answer,
    }
