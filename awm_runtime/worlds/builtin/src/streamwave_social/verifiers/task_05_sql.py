def verify_task(initial_db_path: str, final_db_path: str, final_answer: str | None = None) -> dict:
    import sqlite3

    def rows(path, sql, params=()):
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        conn.row_factory = sqlite3.Row
        try:
            return [dict(r) for r in conn.execute(sql, params).fetchall()]
        finally:
            conn.close()

    sql = ("SELECT cm.id, u.username, cm.parent_comment_id, cm.is_pinned, cm.body FROM comments cm "
           "JOIN users u ON u.id = cm.user_id JOIN videos v ON v.id = cm.video_id "
           "WHERE v.title = 'Sourdough Starter from Scratch' ORDER BY cm.id")
    return {
        "sourdough_comments_before": rows(initial_db_path, sql),
        "sourdough_comments_after": rows(final_db_path, sql),
        "final_answer": final_answer,
    }
