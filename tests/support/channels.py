"""Notification channels the tests point at the fake vendors."""

from pulse.models import NotificationChannel, Organization
from tests.support.vendors import Vendors


def webhook_channel(organization: Organization, vendors: Vendors) -> NotificationChannel:
    """A channel `hook` sending every event of the organization to a fake webhook receiver."""
    return NotificationChannel.create(
        organization=organization, key="hook", type="webhook", settings={"url": vendors.webhook_receiver()}
    )
