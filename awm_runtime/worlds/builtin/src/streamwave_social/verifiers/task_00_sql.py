def verify_task(initial_db_path: str, final_db_path: str, final_answer: str | None = None) -> dict:
    import sqlite3

    def rows(path, sql, params=()):
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        conn.row_factory = sqlite3.Row
        try:
            return [dict(r) for r in conn.execute(sql, params).fetchall()]
        finally:
            conn.close()

    sql = "SELECT id, owner_user_id, title, description, visibility FROM playlists WHERE owner_user_id = 1 ORDER BY id"
    return {
        "my_playlists_before": rows(initial_db_path, sql),
        "my_playlists_after": rows(final_db_path, sql),
        "final_answer": final_answer,
    }
