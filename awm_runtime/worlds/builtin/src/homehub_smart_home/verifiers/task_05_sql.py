def verify_task(initial_db_path: str, final_db_path: str, final_answer: str | None = None) -> dict:
    import sqlite3

    def rows(path, sql, params=()):
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        conn.row_factory = sqlite3.Row
        try:
            return [dict(r) for r in conn.execute(sql, params).fetchall()]
        finally:
            conn.close()

    sql = ("SELECT m.id, h.name AS home_name, u.full_name, m.role, m.can_control_locks, m.access_expires_at "
           "FROM home_members m JOIN users u ON u.id = m.user_id JOIN homes h ON h.id = m.home_id "
           "WHERE h.name = 'Lakeside Cabin' ORDER BY m.id")
    return {
        "lakeside_members_before": rows(initial_db_path, sql),
        "lakeside_members_after": rows(final_db_path, sql),
        "final_answer": final_answer,
    }
