"""The bench's database, through pymongo (the test database's venv has it)."""


def database(uri):
    """The default database of `uri`."""
    import pymongo
    client = pymongo.MongoClient(uri, serverSelectionTimeoutMS=5000)
    return client.get_default_database()


def unrelayed(db):
    """Messages whose relay is not over and on record: those pending, and those a hub stores and sends itself
    (`direct`) that its progress record (`relay_progress`) has not passed yet. The second part is looked for
    only once nothing is pending, bounded as the hub bounds it, by `timestamp` from the record's `since`."""
    count = db.message.count_documents({"relay.state": "pending"})
    if count:
        return count
    records = list(db.relay_progress.find({}, {"through": 1, "since": 1}))
    for record in records:
        count += db.message.count_documents({
            "timestamp": {"$gte": record.get("since", 0) - 60000}, "relay.state": "direct",
            "relay.lease_owner": record["_id"], "relay.seq": {"$gt": record.get("through", 0)}})
    return count
