// DAO's API counts time in HubTime's units (every `now` it takes is a `UnixClock`, every time a Unix millisecond):
// its users get the clock and the conversions with it.
@_exported import HubTime

// The vocabulary every layer shares (urgency, distribution, the locale rule, the webhook events): DAO's models are
// written in it, so its users get it with them.
@_exported import HubModel
