def verify_task_completion(initial_db_path: str, final_db_path: str, final_answer: str | None = None) -> dict:
    import sqlite3

    def q(path, sql, params=()):
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            return conn.execute(sql, params).fetchall()
        finally:
            conn.close()

    vid = q(initial_db_path, "SELECT v.id FROM videos v JOIN channels c ON c.id = v.channel_id WHERE c.owner_user_id = 1 AND v.title = 'Sourdough Starter from Scratch'")
    if len(vid) != 1:
        return {"result": "others"}
    video_id = vid[0][0]
    target_sql = ("SELECT c.id, c.is_pinned FROM comments c JOIN users u ON u.id = c.user_id "
                  "WHERE c.video_id = ? AND u.username = 'jamie_bakes' AND c.parent_comment_id IS NULL")
    before = q(initial_db_path, target_sql, (video_id,))
    after = q(final_db_path, target_sql, (video_id,))
    if len(before) != 1 or len(after) != 1 or before[0][1] != 0 or after[0][1] != 1:
        return {"result": "others"}
    pinned = q(final_db_path, "SELECT id FROM comments WHERE video_id = ? AND is_pinned = 1", (video_id,))
    if [r[0] for r in pinned] != [after[0][0]]:
        return {"result": "others"}
    bodies = "SELECT id, video_id, user_id, body FROM comments ORDER BY id"
    if q(initial_db_path, bodies) != q(final_db_path, bodies):
        return {"result": "others"}
    return {"result": "complete"}
