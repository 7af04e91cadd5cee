def verify_task_completion(initial_db_path: str, final_db_path: str, final_answer: str | None = None) -> dict:
    import sqlite3

    def query(path, sql, params=()):
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        rows = conn.execute(sql, params).fetchall()
        conn.close()
        return rows

    cust = query(initial_db_path, "SELECT id FROM customers WHERE first_name = 'Daniel' AND last_name = 'Okafor'")
    if len(cust) != 1:
        return {"result": "others"}
    customer_id = cust[0][0]
    default_addr = query(initial_db_path, "SELECT id FROM addresses WHERE customer_id = ? AND is_default = 1", (customer_id,))
    coupon = query(initial_db_path, "SELECT id, times_redeemed, discount_value FROM coupons WHERE code = 'WELCOME10'")
    if len(default_addr) != 1 or len(coupon) != 1:
        return {"result": "others"}
    coupon_id, redeemed_before, pct = coupon[0]

    before_ids = {r[0] for r in query(initial_db_path, "SELECT id FROM orders WHERE customer_id = ?", (customer_id,))}
    after = query(final_db_path, "SELECT id, status, shipping_address_id, coupon_id, subtotal, discount_total, total "
                                 "FROM orders WHERE customer_id = ?", (customer_id,))
    new_orders = [r for r in after if r[0] not in before_ids]
    if len(new_orders) != 1:
        return {"result": "others"}
    order_id, status, addr_id, order_coupon, subtotal, discount, total = new_orders[0]
    if status != "paid" or addr_id != default_addr[0][0] or order_coupon != coupon_id:
        return {"result": "others"}

    items = query(final_db_path, "SELECT sku, SUM(quantity) FROM order_items WHERE order_id = ? GROUP BY sku", (order_id,))
    if dict(items) != {"AER-BUD-WHT": 2, "CER-POS-SND": 1}:
        return {"result": "others"}

    price_sql = "SELECT sku, price, stock_quantity FROM product_variants WHERE sku IN ('AER-BUD-WHT', 'CER-POS-SND')"
    init_v = {r[0]: (r[1], r[2]) for r in query(initial_db_path, price_sql)}
    final_v = {r[0]: (r[1], r[2]) for r in query(final_db_path, price_sql)}
    if len(init_v) != 2 or len(final_v) != 2:
        return {"result": "others"}
    if final_v["AER-BUD-WHT"][1] != init_v["AER-BUD-WHT"][1] - 2 or final_v["CER-POS-SND"][1] != init_v["CER-POS-SND"][1] - 1:
        return {"result": "others"}

    exp_sub = round(2 * init_v["AER-BUD-WHT"][0] + init_v["CER-POS-SND"][0], 2)
    exp_disc = round(exp_sub * pct / 100.0, 2)
    taxable = round(exp_sub - exp_disc, 2)
    exp_total = round(taxable + (0.0 if taxable >= 75 else 6.95) + round(taxable * 0.08, 2), 2)
    if abs(subtotal - exp_sub) > 0.02 or abs(discount - exp_disc) > 0.02 or abs(total - exp_total) > 0.02:
        return {"result": "others"}

    pays = query(final_db_path, "SELECT method, amount, status FROM payments WHERE order_id = ?", (order_id,))
    if len(pays) != 1 or pays[0][0] != "card" or pays[0][2] != "captured" or abs(pays[0][1] - total) > 0.02:
        return {"result": "others"}

    redeemed_after = query(final_db_path, "SELECT times_redeemed FROM coupons WHERE id = ?", (coupon_id,))
    if not redeemed_after or redeemed_after[0][0] != redeemed_before + 1:
        return {"result": "others"}
    return {"result": "complete"}
