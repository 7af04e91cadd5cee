def verify_task_completion(initial_db_path: str, final_db_path: str, final_answer: str | None = None) -> dict:
    import sqlite3

    def query(path, sql, params=()):
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        rows = conn.execute(sql, params).fetchall()
        conn.close()
        return rows

    sql = ("SELECT p.name, AVG(r.rating) AS avg_rating FROM products p "
           "JOIN categories c ON c.id = p.category_id "
           "JOIN product_reviews r ON r.product_id = p.id AND r.status = 'approved' "
           "WHERE c.name = 'Audio' GROUP BY p.id ORDER BY avg_rating DESC, p.name")
    ranking = query(initial_db_path, sql)
    if not ranking:
        return {"result": "others"}
    if len(ranking) > 1 and abs(ranking[0][1] - ranking[1][1]) < 1e-9:
        return {"result": "others"}
    expected = ranking[0][0]
    review_sql = "SELECT id, product_id, rating, status FROM product_reviews ORDER BY id"
    if query(initial_db_path, review_sql) != query(final_db_path, review_sql):
        return {"result": "others"}
    answer = " ".join((final_answer or "").lower().split())
    if expected.lower() not in answer:
        return {"result": "others"}
    return {"result": "complete"}
