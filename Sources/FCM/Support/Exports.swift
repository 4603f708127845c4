// FCM's callers convert its Durations (time-outs, Retry-After) to the Unix milliseconds they store with HubTime,
// which comes with FCM so that a file importing FCM has the conversions too.
@_exported import HubTime
