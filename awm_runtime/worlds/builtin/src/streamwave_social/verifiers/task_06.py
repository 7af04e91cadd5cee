def verify_task_completion(initial_db_path: str, final_db_path: str, final_answer: str | None = None) -> dict:
    import sqlite3
    import re

    def q(path, sql, params=()):
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            return conn.execute(sql, params).fetchall()
        finally:
            conn.close()

    if not final_answer:
        return {"result": "others"}
    expected = q(initial_db_path,
                 "SELECT COUNT(*) FROM comments cm JOIN videos v ON v.id = cm.video_id "
                 "JOIN channels c ON c.id = v.channel_id WHERE c.owner_user_id = 1")[0][0]
    snapshot = "SELECT id, video_id, user_id, parent_comment_id, body FROM comments ORDER BY id"
    if q(initial_db_path, snapshot) != q(final_db_path, snapshot):
        return {"result": "others"}
    text = final_answer.lower()
    numbers = [int(n) for n in re.findall(r"(?<![\d.])\d+(?![\d.])", text)]
    if expected in numbers:
        return {"result": "complete"}
    words = {10: "ten", 11: "eleven", 12: "twelve", 13: "thirteen", 14: "fourteen", 15: "fifteen", 16: "sixteen", 17: "seventeen", 18: "eighteen", 19: "nineteen", 20: "twenty"}
    word = words.get(expected)
    if word and re.search(r"\b" + word + r"\b", text):
        return {"result": "complete"}
    return {"result": "others"}
