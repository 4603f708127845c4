import HubModel

/// How urgently a message must reach a person: `HubModel.Urgency`, the one type the archive, the approval rule and the
/// FCM mapping share (named here so that every user of the DAO layer sees it).
public typealias Urgency = HubModel.Urgency
