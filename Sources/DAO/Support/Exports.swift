// DAO's API counts time in HubTime's units (every `now` it takes is a `UnixClock`, every time a Unix millisecond):
// its users get the clock and the conversions with it.
@_exported import HubTime
