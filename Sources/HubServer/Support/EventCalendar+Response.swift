import DAO
import HTTPTypes
import HubCore
import Hummingbird
import Mongo

extension EventCalendar {
    /// The iCalendar file of `event` as a download (`text/calendar`, `event-<id>.ics`): the answer of the API's and
    /// the portal's calendar routes alike.
    /// - Throws: what `EventSchedule` throws for a stored schedule it cannot read.
    static func response(of event: Event, now: Int64) throws -> Response {
        let file = EventCalendar.file(of: event, schedule: try EventSchedule(event.schedule), now: now)
        var headers = HTTPFields()
        headers[.contentType] = "text/calendar; charset=utf-8"
        headers[.contentDisposition] = "attachment; filename=\"event-\(event.id.hex).ics\""
        return Response(status: .ok, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(string: file)))
    }
}
