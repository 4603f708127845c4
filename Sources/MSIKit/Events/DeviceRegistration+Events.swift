import Foundation

extension DeviceRegistration {
    /// The calendar file of `event` (`GET /event/:eventID.ics` with the device's secret): RFC 5545 text, the series
    /// with its exceptions, for the device's calendar.
    func calendarFile(of event: EventReference) async throws(MSIKitError) -> Data {
        guard !event.isRecurringNotice else {
            throw MSIKitError(.invalidArgument, "A recurring notice has no calendar file: only events do.")
        }
        let hub = hub
        return try await authorized { (_, secret) throws(MSIKitError) in
            try await hub.send("GET", ["event", event.eventID + ".ics"], headers: HubConnection.bearer(secret)).body
        }
    }
}
