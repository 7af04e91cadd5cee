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
    count_sql = "SELECT COUNT(*) FROM devices d JOIN homes h ON h.id = d.home_id WHERE h.name = 'Maple Street House' AND d.is_online = 0"
    expected = q(initial_db_path, count_sql)[0][0]
    snapshot = "SELECT id, home_id, name, state, is_online, brightness, target_temperature, firmware_version FROM devices ORDER BY id"
    if q(initial_db_path, snapshot) != q(final_db_path, snapshot):
        return {"result": "others"}
    words = {0: "zero", 1: "one", 2: "two", 3: "three", 4: "four", 5: "five", 6: "six", 7: "seven", 8: "eight", 9: "nine", 10: "ten"}
    text = final_answer.lower()
    numbers = [int(n) for n in re.findall(r"(?<![\d.])\d+(?![\d.])", text)]
    if expected in numbers:
        return {"result": "complete"}
    word = words.get(expected)
    if word and re.search(r"\b" + word + r"\b", text):
        return {"result": "complete"}
    return {"result": "others"}
