import DAO
import HubCore
import HTTPTypes
import Hummingbird
import Mongo

/// The sent messages: newest first, filtered by channel, area or subject, each with its relay state and where it
/// went (a subject's path, or its groups and persons): those whose detail the user sees (`MessageVisibility`: a
/// communicator their own, an admin everyone's).
struct SentController {
    let services: HubServices
    let pages: PortalPages

    static let pageSize = 25

    /// The route on `users`, the group of logged-in users.
    func addRoutes(to users: RouterGroup<PortalRequestContext>) {
        users.get("/sent", use: list)
    }

    /// GET /portal/sent[?channel=&area=&subject=&cursor=]
    @Sendable func list(request: Request, context: PortalRequestContext) async throws -> Response {
        let user = try context.loggedInUser()
        let cube = try await services.cube.cache.snapshot()
        let targets = SendTargets(channels: cube.channels, identity: user.identity)
        let query = request.uri.queryParameters
        let selection = SendTargets.Selection(query: query)
        var messageQuery = MessageQuery(limit: Self.pageSize)
        messageQuery.after = query.get("cursor").flatMap(MessageCursor.init(token:))
        var messages: [Message] = []
        var next: MessageCursor?
        let topicKeys = targets.topicKeys(selection)
        if let topicKeys, topicKeys.isEmpty {
            // A filter that names no subject matches no message (an empty list would mean "all").
        } else {
            messageQuery.topicKeys = topicKeys ?? []
            let page = try await services.messages.detailedPage(messageQuery, for: user.identity)
            messages = page.messages
            next = page.next
        }
        var data = targets.selectData(selection)
        // A message to persons and groups shows whom it went to, its groups by name.
        let groupNames = await SendRecipients.groupNames(of: messages, services: services)
        data["rows"] = messages.map { MessageRow.make($0, location: cube.topics[$0.topicKey], groupNames: groupNames) }
        data["isEmpty"] = messages.isEmpty
        // Another sender's messages are listed only to those who see every sender's.
        data["showSender"] = MessageVisibility.detailSender(for: user.identity) == nil
        data["filtered"] = topicKeys != nil
        if let next {
            var parameters = [("channel", selection.channel), ("area", selection.area), ("subject", selection.subject)]
                .filter { !$0.1.isEmpty }.map { "\($0.0)=\($0.1)" }
            parameters.append("cursor=\(next.token)")
            data["older"] = "/portal/sent?" + parameters.joined(separator: "&")
        }
        return pages.render("sent", context.page("Sent messages", data))
    }
}
