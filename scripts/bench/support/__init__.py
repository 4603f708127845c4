"""What the bench's phases share: /proc readings, the results file, the database, the fake FCM, wrk, the
command line."""
