def verify_task(initial_db_path: str, final_db_path: str, final_answer: str | None = None) -> dict:
    import sqlite3

    def rows(path, sql, params=()):
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        conn.row_factory = sqlite3.Row
        try:
            return [dict(r) for r in conn.execute(sql, params).fetchall()]
        finally:
            conn.close()

    sql = ("SELECT r.id, r.home_id, h.name AS home_name, r.name, r.floor, r.room_type FROM rooms r "
           "JOIN homes h ON h.id = r.home_id WHERE lower(r.name) LIKE '%office%'")
    return {
        "office_rooms_before": rows(initial_db_path, sql),
        "office_rooms_after": rows(final_db_path, sql),
        "room_count_before": rows(initial_db_path, "SELECT COUNT(*) AS n FROM rooms")[0]["n"],
        "room_count_after": rows(final_db_path, "SELECT COUNT(*) AS n FROM rooms")[0]["n"],
        "final_answer": final_answer,
    }
